import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { csrfSync } from 'csrf-sync';
import type { AppContext } from '../../http/context';
import { cleanForms } from '../../http/form-pages';
import { toApiError } from '../../http/middleware';
import { findUser } from '../../services/users';
import { authRoutes } from './auth';
import { copyScriptRoute } from './copy';
import { keyRoutes } from './keys';
import { html } from '../layout';
import { plainMessage, publicPage, send } from './layout';
import { moneyRoutes } from './money';
import { orderRoutes } from './orders';
import { accountSessions, endSession } from './session';
import { webhookRoutes } from './webhook';
import { batchRoutes } from './batches';
import { exportRoutes } from './exports';

// The reseller account area under /account (spec 5.2): sign up and in, API keys, balance and
// top-ups, orders, the webhook, order batches and CSV exports. Server-rendered pages, no script
// needed (a batch's file input uses one to fill its text box); every form carries a
// CSRF token (csrf-sync, synchronizer tokens kept in the Postgres session), every form body
// passes the edge's hygiene rule and a zod schema, and every page goes through the same
// services as REST and MCP, scoped to the signed-in user's account.

const { csrfSynchronisedProtection, invalidCsrfTokenError } = csrfSync({
  size: 32,
  getTokenFromRequest: (req) => (typeof req.body?._csrf === 'string' ? req.body._csrf : undefined),
  // Signing out of a session that has already ended needs no token: there is nothing to protect.
  skipCsrfProtection: (req) => req.path === '/sign-out' && !req.session.userId,
});

/** Anyone not signed in is sent to the sign-in page; a session whose user is gone is ended. */
function requireUser(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    const user = req.session.userId ? await findUser(ctx.orm.em.fork(), req.session.userId) : undefined;
    if (!user) {
      if (req.session.userId) await endSession(req);
      return res.redirect(303, '/account/sign-in');
    }
    res.locals.user = user;
    next();
  };
}

export function accountArea(ctx: AppContext): Router {
  const router = Router();
  router.use(accountSessions(ctx));
  // A batch's CSV text is the one large form (5,000 lines); every other form stays small.
  router.use('/batches', cleanForms('2mb'));
  router.use(cleanForms('16kb'));
  router.use(csrfSynchronisedProtection);

  authRoutes(router, ctx);
  copyScriptRoute(router);
  router.use(requireUser(ctx));
  moneyRoutes(router, ctx);
  keyRoutes(router, ctx);
  orderRoutes(router, ctx);
  webhookRoutes(router, ctx);
  batchRoutes(router, ctx);
  exportRoutes(router, ctx);

  router.use((_req, res) => {
    send(res, 404, publicPage({ title: 'Not found', body: html`<h1>Not found</h1><p class="error" data-testid="error">This page does not exist, or it belongs to another account.</p><p><a href="/account">Back to your account</a></p>` }));
  });
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (err === invalidCsrfTokenError) {
      return send(res, 403, publicPage({
        title: 'Form expired',
        body: html`<h1>This form has expired</h1><p class="error" data-testid="error">The form was not sent from this page, or your session ended. Nothing was changed. Go back, reload the page and try again.</p><p><a href="/account">Back to your account</a></p>`,
      }));
    }
    const apiError = toApiError(err);
    if (apiError.status >= 500) ctx.logger.error({ err, requestId: res.locals.requestId }, 'account area request failed');
    send(res, apiError.status, publicPage({
      title: 'Something went wrong',
      body: html`<h1>${apiError.status === 404 ? 'Not found' : 'That did not work'}</h1><p class="error" data-testid="error">${plainMessage(apiError)}</p><p><a href="/account">Back to your account</a></p>`,
    }), apiError.headers);
  });
  return router;
}
