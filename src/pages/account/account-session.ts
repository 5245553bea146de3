import type { Request, RequestHandler } from 'express';
import type { Config } from '../../config';
import type { Orm } from '../../db/orm';
import type { Logger } from 'pino';
import {
  derivedSessionSecret,
  destroySession,
  postgresSessions,
  secureCookies,
  startSessionAs,
} from '../../http/form-pages';

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

export { secureCookies };

/** SESSION_SECRET, or one derived from CURSOR_SECRET for this area alone. */
export function sessionSecret(config: Pick<Config, 'SESSION_SECRET' | 'CURSOR_SECRET'>): string {
  return (
    config.SESSION_SECRET ??
    derivedSessionSecret({ CURSOR_SECRET: config.CURSOR_SECRET }, 'wholesale account-area session cookie')
  );
}

export function accountSessions(ctx: { orm: Orm; config: Config; logger: Logger }): RequestHandler {
  return postgresSessions(ctx, {
    table: 'account_sessions',
    cookie: SESSION_COOKIE,
    path: '/account',
    sameSite: 'lax',
    secret: sessionSecret(ctx.config),
    anonymousTtlMs: ANONYMOUS_TTL_MS,
  });
}

/**
 * Signs a user in on a new session id: the old session (and any id an attacker planted before
 * sign-in) is destroyed, so session fixation gets nothing.
 */
export async function startSignedInSession(
  req: Request,
  user: { id: string; accountId: string },
  ttlSeconds: number,
): Promise<void> {
  await startSessionAs(
    req,
    (s) => {
      s.userId = user.id;
      s.accountId = user.accountId;
    },
    ttlSeconds,
  );
}

export const endSession = destroySession;
