import type { RequestHandler, Router } from 'express';
import type { AppContext } from '../../http/context';
import { findUser } from '../../services/accounts/users';
import { authRoutes } from './account-auth';
import { copyScriptRoute } from './account-copy';
import { keyRoutes } from './account-keys';
import { html } from '../page-layout';
import { signedInArea } from '../signed-in-area';
import { plainMessage, publicPage } from './account-layout';
import { moneyRoutes } from './account-money';
import { orderRoutes } from './account-orders';
import { accountSessions, endSession } from './account-session';
import { webhookRoutes } from './account-webhook';
import { batchRoutes } from './account-batches';
import { exportRoutes } from './account-exports';

// The reseller account area under /account (spec 5.2): sign up and in, API keys, balance and
// top-ups, orders, the webhook, order batches and CSV exports. Server-rendered pages, no script
// needed (a batch's file input uses one to fill its text box); every form carries a
// CSRF token (csrf-sync, synchronizer tokens kept in the Postgres session), every form body
// passes the edge's hygiene rule and a zod schema, and every page goes through the same
// services as REST and MCP, scoped to the signed-in user's account.

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
  return signedInArea(ctx, {
    name: 'account area',
    sessions: accountSessions(ctx),
    // A batch's CSV text is the one large form (5,000 lines); every other form stays small.
    formLimit: '16kb',
    largeForms: { path: '/batches', limit: '2mb' },
    signedIn: (req) => !!req.session.userId,
    open: (router) => {
      authRoutes(router, ctx);
      copyScriptRoute(router);
    },
    guard: requireUser(ctx),
    rooms: (router) => {
      moneyRoutes(router, ctx);
      keyRoutes(router, ctx);
      orderRoutes(router, ctx);
      webhookRoutes(router, ctx);
      batchRoutes(router, ctx);
      exportRoutes(router, ctx);
    },
    frame: publicPage,
    plainMessage,
    back: html`<p><a href="/account">Back to your account</a></p>`,
    notFound: 'This page does not exist, or it belongs to another account.',
    retry: 'Go back, reload the page and try again.',
  });
}
