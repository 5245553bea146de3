import { hkdfSync } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import session from 'express-session';
import connectPgSimple from 'connect-pg-simple';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { sessionStorePool } from '../db/session-store';
import { secureCookies } from '../pages/account/session';

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

function consoleSecret(config: Pick<Config, 'SESSION_SECRET' | 'CURSOR_SECRET'>): string {
  const base = config.SESSION_SECRET ?? config.CURSOR_SECRET;
  return Buffer.from(hkdfSync('sha256', base, '', 'wholesale staff-console session cookie', 32)).toString('hex');
}

export function consoleSessions(ctx: { orm: Orm; config: Config; logger: Logger }): RequestHandler {
  const PgStore = connectPgSimple(session);
  const store = new PgStore({
    pgPromise: sessionStorePool(ctx.orm),
    tableName: 'staff_sessions',
    createTableIfMissing: false,
    errorLog: (...args: unknown[]) => ctx.logger.warn({ err: args.find((a) => a instanceof Error) }, 'console session store'),
  });
  return session({
    name: CONSOLE_COOKIE,
    secret: consoleSecret(ctx.config),
    store,
    resave: false,
    saveUninitialized: false,
    rolling: true,
    unset: 'destroy',
    cookie: {
      path: '/console',
      httpOnly: true,
      // Strict: the console is never entered from a link on another site with a session.
      sameSite: 'strict',
      secure: secureCookies(ctx.config.publicBaseUrl),
      maxAge: ANONYMOUS_TTL_MS,
    },
  });
}

const done = (fn: (cb: (err?: unknown) => void) => void) => new Promise<void>((ok, fail) => fn((err) => (err ? fail(err) : ok())));

/** A new session id for the signed-in member: an id planted before sign-in gets nothing. */
export async function startStaffSession(req: Request, staffId: string, idleSeconds: number): Promise<void> {
  await done((cb) => req.session.regenerate(cb));
  req.session.staffId = staffId;
  req.session.staffSignedInAt = Date.now();
  req.session.cookie.maxAge = idleSeconds * 1000;
  await done((cb) => req.session.save(cb));
}

export async function endStaffSession(req: Request): Promise<void> {
  await done((cb) => req.session.destroy(cb));
}

/** Past the absolute limit, however active the session has been. */
export const sessionTooOld = (req: Request) => Date.now() - (req.session.staffSignedInAt ?? 0) > CONSOLE_MAX_SECONDS * 1000;
