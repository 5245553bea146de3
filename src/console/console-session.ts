import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { derivedSessionSecret, destroySession, postgresSessions, startSessionAs } from '../http/form-pages';

// Console sessions: the account area's recipe (express-session, Postgres store, HttpOnly,
// SameSite, a new id on sign-in) with everything of their own: the cookie name and path, the
// table (staff_sessions) and the signing secret (its own HKDF label). A reseller's session cookie
// is never sent to /console, and one pasted in is signed with another key and names no row here.
// Sessions end after CONSOLE_IDLE_SECONDS without a request (shorter than a reseller's), and
// after CONSOLE_MAX_SECONDS whatever happens.

declare module 'express-session' {
  interface SessionData {
    staffId?: string;
    /** Unix ms of the sign-in, for the absolute limit. */
    staffSignedInAt?: number;
  }
}

export const CONSOLE_COOKIE = 'wholesale.console.sid';
const CONSOLE_IDLE_SECONDS = 30 * 60;
export const CONSOLE_MAX_SECONDS = 12 * 3600;
/** Anonymous sessions (a sign-in form's CSRF token) last this long. */
const ANONYMOUS_TTL_MS = 15 * 60 * 1000;

/** Idle limit: half an hour, and never longer than half of a reseller's session. */
export const consoleIdleSeconds = (config: Pick<Config, 'SESSION_TTL_SECONDS'>) =>
  Math.max(60, Math.min(CONSOLE_IDLE_SECONDS, Math.floor(config.SESSION_TTL_SECONDS / 2)));

export function consoleSessions(ctx: { orm: Orm; config: Config; logger: Logger }): RequestHandler {
  return postgresSessions(ctx, {
    table: 'staff_sessions',
    cookie: CONSOLE_COOKIE,
    path: '/console',
    // Strict: the console is never entered from a link on another site with a session.
    sameSite: 'strict',
    secret: derivedSessionSecret(ctx.config, 'wholesale staff-console session cookie'),
    anonymousTtlMs: ANONYMOUS_TTL_MS,
  });
}

/** A new session id for the signed-in member: an id planted before sign-in gets nothing. */
export async function startStaffSession(req: Request, staffId: string, idleSeconds: number): Promise<void> {
  await startSessionAs(
    req,
    (s) => {
      s.staffId = staffId;
      s.staffSignedInAt = Date.now();
    },
    idleSeconds,
  );
}

export const endStaffSession = destroySession;

/** Past the absolute limit, however active the session has been. */
export const sessionTooOld = (req: Request) =>
  Date.now() - (req.session.staffSignedInAt ?? 0) > CONSOLE_MAX_SECONDS * 1000;
