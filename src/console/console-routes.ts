import type { RequestHandler, Router } from 'express';
import type { AppContext } from '../http/context';
import { activeStaff } from '../services/accounts/staff';
import { parseKeyRing } from '../temporal/codec';
import { authRoutes } from './console-auth';
import { Forbidden } from './console-guard';
import { signedInArea } from '../pages/signed-in-area';
import { html, plainMessage, publicConsolePage } from './console-layout';
import { orderRoutes } from './console-orders';
import { redemptionRoutes } from './console-redemptions';
import { resellerRoutes } from './console-resellers';
import { productRoutes } from './console-products';
import { searchRoutes } from './console-search';
import { consoleSessions, endStaffSession, sessionTooOld } from './console-session';
import { staffRoutes } from './console-staff';

// The staff console under /console: people, not a shared token, resolve orders and
// redemptions. Server-rendered pages; every form carries a CSRF token (csrf-sync, kept in the
// console's own Postgres session), every body passes the edge's hygiene rule and a zod schema,
// every value on a page is escaped, and every action goes through the services the admin API and
// the CLI use, with an audit row naming the person, the reason and the request id.

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
  return signedInArea(ctx, {
    name: 'console',
    sessions: consoleSessions(ctx),
    formLimit: '96kb',
    signedIn: (req) => !!req.session.staffId,
    open: (router) => authRoutes(router, ctx, keys),
    guard: requireStaff(ctx),
    rooms: (router) => {
      orderRoutes(router, ctx);
      redemptionRoutes(router, ctx, keys);
      resellerRoutes(router, ctx);
      searchRoutes(router, ctx);
      productRoutes(router, ctx);
      staffRoutes(router, ctx, keys);
    },
    frame: publicConsolePage,
    plainMessage,
    back: html`<p><a href="/console">Back to the console</a></p>`,
    notFound: 'This page does not exist.',
    retry: 'Reload the page and try again.',
    showRequestId: true,
    refusal: (err) =>
      err instanceof Forbidden
        ? {
            title: 'Not allowed',
            body: html`<h1>Not allowed</h1><p class="error" data-testid="error">Your role cannot do this (it needs ${err.needed}). Nothing was changed.</p><p><a href="/console">Back to the console</a></p>`,
          }
        : undefined,
  });
}
