import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { csrfSync } from 'csrf-sync';
import type { AppContext } from '../http/context';
import { cleanForms } from '../http/form-pages';
import { toApiError } from '../http/middleware';
import { activeStaff } from '../services/staff';
import { parseKeyRing } from '../temporal/codec';
import { authRoutes } from './auth';
import { Forbidden } from './guard';
import { html, plainMessage, publicConsolePage, send } from './layout';
import { orderRoutes } from './orders';
import { redemptionRoutes } from './redemptions';
import { resellerRoutes } from './resellers';
import { productRoutes } from './products';
import { searchRoutes } from './search';
import { consoleSessions, endStaffSession, sessionTooOld } from './session';
import { staffRoutes } from './staff';

// The staff console under /console: people, not a shared token, resolve orders and
// redemptions. Server-rendered pages; every form carries a CSRF token (csrf-sync, kept in the
// console's own Postgres session), every body passes the edge's hygiene rule and a zod schema,
// every value on a page is escaped, and every action goes through the services the admin API and
// the CLI use, with an audit row naming the person, the reason and the request id.

const { csrfSynchronisedProtection, invalidCsrfTokenError } = csrfSync({
  size: 32,
  getTokenFromRequest: (req) => (typeof req.body?._csrf === 'string' ? req.body._csrf : undefined),
  // Signing out of a session that has already ended needs no token: there is nothing to protect.
  skipCsrfProtection: (req) => req.path === '/sign-out' && !req.session.staffId,
});

/** Anyone not signed in goes to the sign-in page; a session of a disabled member, or too old, ends. */
function requireStaff(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    const staff = req.session.staffId ? await activeStaff(ctx.orm.em.fork(), req.session.staffId) : undefined;
    if (!staff || sessionTooOld(req)) {
      const ended = !!req.session.staffId;
      if (ended) await endStaffSession(req);
      return res.redirect(303, ended ? '/console/sign-in?notice=session-ended' : '/console/sign-in');
    }
    res.locals.staff = staff;
    next();
  };
}

export function staffConsole(ctx: AppContext): Router {
  const keys = parseKeyRing(ctx.config.TEMPORAL_PAYLOAD_KEYS);
  const router = Router();
  router.use(consoleSessions(ctx));
  router.use(cleanForms('96kb'));
  router.use(csrfSynchronisedProtection);

  authRoutes(router, ctx, keys);
  router.use(requireStaff(ctx));
  orderRoutes(router, ctx);
  redemptionRoutes(router, ctx, keys);
  resellerRoutes(router, ctx);
  searchRoutes(router, ctx);
  productRoutes(router, ctx);
  staffRoutes(router, ctx, keys);

  const back = html`<p><a href="/console">Back to the console</a></p>`;
  router.use((_req, res) => {
    send(res, 404, publicConsolePage({ title: 'Not found', body: html`<h1>Not found</h1><p class="error" data-testid="error">This page does not exist.</p>${back}` }));
  });
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (err === invalidCsrfTokenError) {
      return send(res, 403, publicConsolePage({
        title: 'Form expired',
        body: html`<h1>This form has expired</h1><p class="error" data-testid="error">The form was not sent from this page, or your session ended. Nothing was changed. Reload the page and try again.</p>${back}`,
      }));
    }
    if (err instanceof Forbidden) {
      return send(res, 403, publicConsolePage({
        title: 'Not allowed',
        body: html`<h1>Not allowed</h1><p class="error" data-testid="error">Your role cannot do this (it needs ${err.needed}). Nothing was changed.</p>${back}`,
      }));
    }
    const apiError = toApiError(err);
    if (apiError.status >= 500) ctx.logger.error({ err, requestId: res.locals.requestId }, 'console request failed');
    send(res, apiError.status, publicConsolePage({
      title: 'Something went wrong',
      body: html`<h1>${apiError.status === 404 ? 'Not found' : 'That did not work'}</h1><p class="error" data-testid="error">${plainMessage(apiError)}</p>
<p class="muted">Request id <span class="code">${res.locals.requestId}</span></p>${back}`,
    }), apiError.headers);
  });
  return router;
}
