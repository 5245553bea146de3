import { hkdfSync } from 'node:crypto';
import express, { type Request, type RequestHandler } from 'express';
import session from 'express-session';
import connectPgSimple from 'connect-pg-simple';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { sessionStorePool } from '../db/session-store';
import { ApiError } from '../domain/errors';
import { assertCleanInput } from './hygiene';

// What the server-rendered areas with a sign-in (the reseller account area, the staff console)
// share: the form-body rule and sessions kept in Postgres. Each area has its own cookie, path,
// table and signing key, so a session of one never opens the other.

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The form parser quietly turns bytes that are not UTF-8 into U+FFFD (as the query parser does);
 * like the query rule in cleanRequest, such a form is refused instead.
 */
function isUtf8Form(raw: Buffer): boolean {
  try {
    for (const part of UTF8.decode(raw).split(/[&=]/)) decodeURIComponent(part.replace(/\+/g, ' '));
    return true;
  } catch {
    return false;
  }
}

/** Requests whose form body failed that check (marked by the parser's verify hook). */
const malformedForms = new WeakSet<object>();

/**
 * The form parser, then the edge's hygiene rule on every field before anything reads it (the
 * CSRF check included): a body that is not percent-encoded UTF-8 is `invalid_input`.
 */
export function cleanForms(limit: string): RequestHandler[] {
  return [
    express.urlencoded({
      extended: false,
      limit,
      parameterLimit: 20,
      verify: (req, _res, raw) => {
        if (!isUtf8Form(raw)) malformedForms.add(req);
      },
    }),
    (req, _res, next) => {
      if (malformedForms.has(req))
        throw new ApiError('invalid_input', 'The form is not valid percent-encoded UTF-8', {
          issues: [{ path: 'body', message: 'is not valid percent-encoded UTF-8' }],
        });
      assertCleanInput({ body: req.body });
      next();
    },
  ];
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Secure everywhere except plain http on a loopback address (local development), where browsers would not send a Secure cookie back. */
export function secureCookies(publicBaseUrl: string): boolean {
  const url = new URL(publicBaseUrl);
  return !(url.protocol === 'http:' && (LOOPBACK.has(url.hostname) || url.hostname.startsWith('127.')));
}

/**
 * SESSION_SECRET, or one derived from CURSOR_SECRET for `purpose` alone (HKDF with its own
 * label), so `npm start` needs no setup and production, which refuses the built-in CURSOR_SECRET,
 * never signs sessions with a known key.
 */
export function derivedSessionSecret(
  config: Pick<Config, 'SESSION_SECRET' | 'CURSOR_SECRET'>,
  purpose: string,
): string {
  return Buffer.from(hkdfSync('sha256', config.SESSION_SECRET ?? config.CURSOR_SECRET, '', purpose, 32)).toString(
    'hex',
  );
}

export interface AreaSessions {
  /** The table a migration created for this area's sessions. */
  table: string;
  cookie: string;
  path: string;
  sameSite: 'lax' | 'strict';
  secret: string;
  /** How long a visitor who has not signed in keeps a session (for a form's CSRF token). */
  anonymousTtlMs: number;
}

/**
 * express-session with connect-pg-simple, stored in Postgres so every API process shares them.
 * A session row is written only once it holds something (a CSRF token, a signed-in user); the
 * cookie is HttpOnly, limited to the area's path, and Secure except on loopback http.
 */
export function postgresSessions(
  ctx: { orm: Orm; config: Config; logger: Logger },
  area: AreaSessions,
): RequestHandler {
  const PgStore = connectPgSimple(session);
  const store = new PgStore({
    pgPromise: sessionStorePool(ctx.orm),
    tableName: area.table,
    createTableIfMissing: false,
    errorLog: (...args: unknown[]) =>
      ctx.logger.warn({ err: args.find((a) => a instanceof Error), table: area.table }, 'session store'),
  });
  return session({
    name: area.cookie,
    secret: area.secret,
    store,
    resave: false,
    saveUninitialized: false,
    rolling: true,
    unset: 'destroy',
    cookie: {
      path: area.path,
      httpOnly: true,
      sameSite: area.sameSite,
      secure: secureCookies(ctx.config.publicBaseUrl),
      maxAge: area.anonymousTtlMs,
    },
  });
}

const done = (fn: (cb: (err?: unknown) => void) => void) =>
  new Promise<void>((ok, fail) => fn((err) => (err ? fail(err) : ok())));

/**
 * Signs someone in on a new session id: the old session (and any id an attacker planted before
 * sign-in) is destroyed, so session fixation gets nothing.
 */
export async function startSessionAs(
  req: Request,
  fill: (s: Request['session']) => void,
  ttlSeconds: number,
): Promise<void> {
  await done((cb) => req.session.regenerate(cb));
  fill(req.session);
  req.session.cookie.maxAge = ttlSeconds * 1000;
  await done((cb) => req.session.save(cb));
}

export async function destroySession(req: Request): Promise<void> {
  await done((cb) => req.session.destroy(cb));
}
