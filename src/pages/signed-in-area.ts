import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { csrfSync } from 'csrf-sync';
import type { ApiError } from '../domain/errors';
import type { AppContext } from '../http/context';
import { cleanForms } from '../http/form-pages';
import { toApiError } from '../http/middleware';
import { html, sendPage, type SafeHtml } from './page-layout';

// What the two server-rendered areas with a sign-in share (the reseller account area under
// /account, the staff console under /console), written once so they cannot drift apart: the form
// pieces, the sign-in page, and the wiring of an area: its Postgres session, the form-body rule,
// CSRF tokens on every form, the pages open before sign-in, the guard, the pages behind it, and
// the not-found and error pages. Each area keeps its own session, cookie, guard and frame.

export const csrfField = (token: string) => html`<input type="hidden" name="_csrf" value="${token}">`;

export const errorBox = (message?: string) =>
  message ? html`<p class="error" role="alert" data-testid="error">${message}</p>` : undefined;

export const noticeBox = (message?: string | SafeHtml) =>
  message ? html`<p class="notice" role="status" data-testid="notice">${message}</p>` : undefined;

/** A page of the area outside its sign-in (its frame, without the navigation of the signed in). */
export type PublicPage = (opts: { title: string; body: SafeHtml }) => string;

/**
 * The sign-in page: email and password, and for the console a code from an authenticator app (or
 * a recovery code) in the same form, so there is no half-signed-in state.
 */
export function signInPage(
  frame: PublicPage,
  opts: {
    heading: string;
    lead: SafeHtml | string;
    action: string;
    csrf: string;
    email?: string;
    error?: string;
    notice?: string;
    withCode?: boolean;
    after?: SafeHtml;
  },
): string {
  const code = opts.withCode
    ? html`
  <label for="code">Code <span class="hint">(from your authenticator app, or a recovery code)</span></label>
  <input id="code" name="code" autocomplete="one-time-code" inputmode="numeric" maxlength="64" required>`
    : '';
  return frame({
    title: 'Sign in',
    body: html`<h1>${opts.heading}</h1>
<p class="lead">${opts.lead}</p>
${noticeBox(opts.notice)}${errorBox(opts.error)}
<form method="post" action="${opts.action}">
  ${csrfField(opts.csrf)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" value="${opts.email ?? ''}" required>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>${code}
  <button type="submit" data-testid="sign-in">Sign in</button>
</form>${opts.after ?? ''}`,
  });
}

export interface AreaPlan {
  /** For the log line of a failed request ('console', 'account area'). */
  name: string;
  /** The area's own Postgres session (cookie, path, table, signing key). */
  sessions: RequestHandler;
  /** The form body limit; `largeForms` raises it under one path. */
  formLimit: string;
  largeForms?: { path: string; limit: string };
  /** Whether the request's session is signed in: signing out of an ended one needs no CSRF token. */
  signedIn: (req: Request) => boolean;
  /** The routes open before sign-in (sign in, sign up, setup). */
  open: (router: Router) => void;
  /** Sends whoever is not signed in to the sign-in page. */
  guard: RequestHandler;
  /** The routes of the signed in. */
  rooms: (router: Router) => void;
  frame: PublicPage;
  plainMessage: (err: ApiError) => string;
  /** The link back into the area, under every not-found and error page. */
  back: SafeHtml;
  notFound: string;
  /** What to do after a refused form (the console's pages link back; the account's may be a step deep). */
  retry: string;
  /** The error page shows the request id, for a colleague to find the log line. */
  showRequestId?: boolean;
  /** An area's own refusal (the console's role check), as a 403 page. */
  refusal?: (err: unknown) => { title: string; body: SafeHtml } | undefined;
}

/** Synchronizer tokens (csrf-sync), kept in the area's session and sent as the form field `_csrf`. */
function csrfOf(signedIn: (req: Request) => boolean) {
  return csrfSync({
    size: 32,
    getTokenFromRequest: (req) => (typeof req.body?._csrf === 'string' ? req.body._csrf : undefined),
    // Signing out of a session that has already ended needs no token: there is nothing to protect.
    skipCsrfProtection: (req) => req.path === '/sign-out' && !signedIn(req),
  });
}

export function signedInArea(ctx: AppContext, plan: AreaPlan): Router {
  const { csrfSynchronisedProtection, invalidCsrfTokenError } = csrfOf(plan.signedIn);
  const router = Router();
  router.use(plan.sessions);
  if (plan.largeForms) router.use(plan.largeForms.path, cleanForms(plan.largeForms.limit));
  router.use(cleanForms(plan.formLimit));
  router.use(csrfSynchronisedProtection);

  plan.open(router);
  router.use(plan.guard);
  plan.rooms(router);

  router.use((_req, res) => {
    sendPage(
      res,
      404,
      plan.frame({
        title: 'Not found',
        body: html`<h1>Not found</h1><p class="error" data-testid="error">${plan.notFound}</p>${plan.back}`,
      }),
    );
  });
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (err === invalidCsrfTokenError) {
      return sendPage(
        res,
        403,
        plan.frame({
          title: 'Form expired',
          body: html`<h1>This form has expired</h1><p class="error" data-testid="error">The form was not sent from this page, or your session ended. Nothing was changed. ${plan.retry}</p>${plan.back}`,
        }),
      );
    }
    const refused = plan.refusal?.(err);
    if (refused) return sendPage(res, 403, plan.frame(refused));
    const apiError = toApiError(err);
    if (apiError.status >= 500)
      ctx.logger.error({ err, requestId: res.locals.requestId }, `${plan.name} request failed`);
    const requestId = plan.showRequestId
      ? html`\n<p class="muted">Request id <span class="code">${res.locals.requestId}</span></p>`
      : '';
    sendPage(
      res,
      apiError.status,
      plan.frame({
        title: 'Something went wrong',
        body: html`<h1>${apiError.status === 404 ? 'Not found' : 'That did not work'}</h1><p class="error" data-testid="error">${plan.plainMessage(apiError)}</p>${requestId}${plan.back}`,
      }),
      apiError.headers,
    );
  });
  return router;
}
