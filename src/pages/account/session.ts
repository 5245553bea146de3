import { hkdfSync } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import session from 'express-session';
import connectPgSimple from 'connect-pg-simple';
import type { Config } from '../../config';
import type { Orm } from '../../db/orm';
import { sessionStorePool } from '../../db/session-store';
import type { Logger } from 'pino';

// Account-area sessions: express-session with connect-pg-simple, stored in Postgres
// (`account_sessions`, created by a migration) so every API process shares them. The cookie is
// HttpOnly, SameSite=Lax, limited to /account, and Secure except on a plain-http loopback address
// (local development), where browsers would not send a Secure cookie back.

declare module 'express-session' {
  interface SessionData {
    userId?: string;
    accountId?: string;
  }
}

export const SESSION_COOKIE = 'wholesale.sid';
/** A visitor who has not signed in keeps a session (for the form's CSRF token) this long. */
const ANONYMOUS_TTL_MS = 30 * 60 * 1000;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Secure everywhere except plain http on a loopback address. */
export function secureCookies(publicBaseUrl: string): boolean {
  const url = new URL(publicBaseUrl);
  return !(url.protocol === 'http:' && (LOOPBACK.has(url.hostname) || url.hostname.startsWith('127.')));
}

/**
 * SESSION_SECRET, or one derived from CURSOR_SECRET for this purpose alone (HKDF with its own
 * label), so `npm start` needs no setup and production, which refuses the built-in CURSOR_SECRET,
 * never signs sessions with a known key.
 */
export function sessionSecret(config: Pick<Config, 'SESSION_SECRET' | 'CURSOR_SECRET'>): string {
  if (config.SESSION_SECRET) return config.SESSION_SECRET;
  return Buffer.from(hkdfSync('sha256', config.CURSOR_SECRET, '', 'wholesale account-area session cookie', 32)).toString('hex');
}

export function accountSessions(ctx: { orm: Orm; config: Config; logger: Logger }): RequestHandler {
  const PgStore = connectPgSimple(session);
  const store = new PgStore({
    pgPromise: sessionStorePool(ctx.orm),
    tableName: 'account_sessions',
    createTableIfMissing: false,
    errorLog: (...args: unknown[]) => ctx.logger.warn({ err: args.find((a) => a instanceof Error) }, 'account session store'),
  });
  return session({
    name: SESSION_COOKIE,
    secret: sessionSecret(ctx.config),
    store,
    resave: false,
    // A session row is written only once it holds something (a CSRF token, a signed-in user).
    saveUninitialized: false,
    rolling: true,
    unset: 'destroy',
    cookie: {
      path: '/account',
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies(ctx.config.publicBaseUrl),
      maxAge: ANONYMOUS_TTL_MS,
    },
  });
}

/**
 * Signs a user in on a new session id: the old session (and any id an attacker planted before
 * sign-in) is destroyed, so session fixation gets nothing.
 */
export async function startSignedInSession(req: Request, user: { id: string; accountId: string }, ttlSeconds: number): Promise<void> {
  await new Promise<void>((ok, fail) => req.session.regenerate((err) => (err ? fail(err) : ok())));
  req.session.userId = user.id;
  req.session.accountId = user.accountId;
  req.session.cookie.maxAge = ttlSeconds * 1000;
  await new Promise<void>((ok, fail) => req.session.save((err) => (err ? fail(err) : ok())));
}

export async function endSession(req: Request): Promise<void> {
  await new Promise<void>((ok, fail) => req.session.destroy((err) => (err ? fail(err) : ok())));
}
