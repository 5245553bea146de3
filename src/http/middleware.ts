import { createHash, randomBytes } from 'node:crypto';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { ZodError } from 'zod';
import { isDatabaseUnavailable } from '../db/db-errors';
import { ApiError, errorBody } from '../domain/errors';
import { rateLimited } from '../metrics/registry';
import { isTemporalUnavailable } from '../temporal/temporal-errors';
import { PlacementRefused, type PlacementKind } from '../services/admission';
import { authenticate, type Principal } from '../services/accounts/accounts';
import { assertKeyUsable } from '../services/accounts/key-access';
import {
  hitRateLimit,
  pruneSometimes,
  budgetStanding,
  rateLimitResult,
  rateWindow,
  type RateLimitResult,
} from '../services/rate-limit';
import { timed } from '../metrics/server-timing';
import type { AppContext } from './context';
import { dependencyOf, outageLogOf, type OutageLog } from './outage-log';

const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

const REQUEST_ID_RE = /^[A-Za-z0-9._-]{8,64}$/;

/** Every response carries X-Request-Id; a well-formed one from the caller is kept. */
export const newRequestId = () => `req_${randomBytes(10).toString('hex')}`;

export const requestId: RequestHandler = (req, res, next) => {
  const given = req.header('x-request-id');
  const id = given && REQUEST_ID_RE.test(given) ? given : newRequestId();
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};

/** One log line per request: route path only (query strings may carry codes), never headers. */
export function accessLog(ctx: AppContext): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      ctx.logger.info(
        {
          requestId: res.locals.requestId,
          method: req.method,
          // Checkout links are secrets: their id never reaches the log.
          path: (req.baseUrl + req.path)
            .replace(/\/checkout\/[^/]+/, '/checkout/:id')
            .replace(/\/v1\/checkouts\/[^/]+/, '/v1/checkouts/:id')
            .replace(/^\/codec\/[^/]+\/(decode|encode)$/, '/codec/:token/$1'),
          status: res.statusCode,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          accountId: principalOf(res)?.account.id,
        },
        'request',
      );
    });
    next();
  };
}

/** How the admission gate knows a key without keeping it: its SHA-256, base64url. */
const keyDigest = (key: string) => createHash('sha256').update(key).digest('base64url');

/** A request budget per key (or per client IP), in fixed windows counted in Postgres. */
export interface Budget {
  name: string;
  limit: number;
  windowSeconds: number;
}

/**
 * The principal `bearerAuth` found for this request, if any. `res.locals` is `any` in Express's
 * types, so it is read here only, where its type holds (a lint rule keeps it so).
 */
export function principalOf(res: Response): Principal | undefined {
  return res.locals.principal as Principal | undefined;
}

/** The principal of a request `bearerAuth` let through; without one, the 401 the key check gives. */
export function authenticated(res: Response): Principal {
  const principal = principalOf(res);
  if (!principal) throw new ApiError('unauthorized', 'Missing or invalid API key');
  return principal;
}

/**
 * The bearer key → `res.locals.principal`. With a budget, the same statement counts the request in
 * the key's window (one round trip for both), and a request over it is answered 429 as
 * `rateLimit` answers it.
 */
export function bearerAuth(ctx: AppContext, budget?: Budget): RequestHandler {
  return async (req, res, next) => {
    const header = req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const em = ctx.orm.em.fork();
    const window = budget ? rateWindow(budget.windowSeconds) : undefined;
    const found = !match
      ? undefined
      : window
        ? await timed('auth', () =>
            authenticate(em, match[1], { bucketPrefix: `${budget!.name}:`, windowStart: window.start }),
          )
        : await timed('auth', () => authenticate(em, match[1]));
    if (!found) throw new ApiError('unauthorized', 'Missing or invalid API key');
    const { hits, ...principal } = found as Principal & { hits?: number };
    assertKeyUsable(principal, req.ip);
    res.locals.principal = principal;
    if (budget && window) {
      await pruneSometimes(em);
      const result = rateLimitResult(hits ?? 0, budget.limit, window);
      // The account and budget this key showed, for refusing its next placement before it is read.
      if (ctx.admission && match)
        ctx.admission.remember(keyDigest(match[1]), principal.account.id, {
          limit: budget.limit,
          remaining: result.remaining,
          resetAt: result.resetAt,
          windowSeconds: budget.windowSeconds,
        });
      enforceBudget(res, budget, result);
    }
    next();
  };
}

/**
 * A placement route (POST /orders, POST /topup) this process cannot take from anyone now (its
 * admission limit is full, or the key's account, known from an earlier request, holds its share)
 * is refused before the key is looked up: the refusal reads nothing and counts against no budget.
 * One let through holds its place until its placement runs.
 */
export function placementPrecheck(ctx: Pick<AppContext, 'admission'>, kind: PlacementKind): RequestHandler {
  return (req, res, next) => {
    const gate = ctx.admission;
    if (!gate) return next();
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '');
    const digest = match ? keyDigest(match[1]) : undefined;
    try {
      gate.refuseEarly(kind, digest);
    } catch (err) {
      // Nothing was counted: the key's budget as this process last saw it counted (spec section 8).
      const seen = digest === undefined ? undefined : gate.budgetOf(digest);
      if (seen) budgetHeaders(res, seen.limit, budgetStanding(seen));
      throw err;
    }
    const hold = gate.hold(digest);
    res.once('close', () => gate.releaseHold(hold));
    gate.within(hold, next);
  };
}

/**
 * A budget shared by every API process (counters live in Postgres): per API key, or per client IP
 * (`per: 'ip'`, for pages that have no key; the IP as `trust proxy` (TRUST_PROXY) resolves it).
 */
export function rateLimit(
  ctx: Pick<AppContext, 'orm'>,
  opts: Budget & { methods?: string[]; per?: 'key' | 'ip' },
): RequestHandler {
  return async (req, res, next) => {
    if (opts.methods && !opts.methods.includes(req.method)) return next();
    const who = opts.per === 'ip' ? (req.ip ?? 'unknown') : authenticated(res).apiKeyId;
    const result = await timed('rate', () =>
      hitRateLimit(ctx.orm.em.fork(), `${opts.name}:${who}`, opts.limit, opts.windowSeconds),
    );
    enforceBudget(res, opts, result);
    next();
  };
}

function budgetHeaders(res: Response, limit: number, standing: { remaining: number; resetAt: number }): void {
  res.setHeader('X-RateLimit-Limit', String(limit));
  res.setHeader('X-RateLimit-Remaining', String(standing.remaining));
  res.setHeader('X-RateLimit-Reset', String(standing.resetAt));
}

/** The budget's headers on every answer; over it, 429 with Retry-After. */
function enforceBudget(res: Response, budget: Budget, result: RateLimitResult): void {
  budgetHeaders(res, budget.limit, result);
  if (!result.allowed) {
    rateLimited.inc({ limit: budget.name });
    throw new ApiError('rate_limited', 'Request limit reached; retry after the time in Retry-After', undefined, {
      'Retry-After': String(result.retryAfter),
    });
  }
}

export const notFound: RequestHandler = (req, _res, next) => {
  next(new ApiError('not_found', `No route for ${req.method} ${req.baseUrl}${req.path}`));
};

/** Turns any error into the error body of spec 2.11. */
export function errorHandler(ctx: AppContext, outage: OutageLog = outageLogOf(ctx)): ErrorRequestHandler {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const apiError = toApiError(err);
    // An outage answers every request with a retryable 503: sampled warnings between one error
    // line when it begins and one info line when it ends (./outage-log), not a line per request.
    // A placement refused by admission control is no outage and no fault: its metrics count it.
    if (!(err instanceof PlacementRefused)) {
      if (apiError.code === 'service_unavailable')
        outage.deferred(dependencyOf(err), { err, requestId: res.locals.requestId });
      else if (apiError.status >= 500) ctx.logger.error({ err, requestId: res.locals.requestId }, 'request failed');
    }
    for (const [k, v] of Object.entries(apiError.headers ?? {})) res.setHeader(k, v);
    res.status(apiError.status).json(errorBody(apiError, res.locals.requestId));
  };
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ZodError) {
    return new ApiError('invalid_input', 'Invalid parameters', {
      issues: err.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    });
  }
  const e = err as { type?: string; status?: number };
  if (e?.type === 'entity.parse.failed') return new ApiError('invalid_input', 'Malformed JSON body');
  if (e?.type === 'entity.too.large') return new ApiError('invalid_input', 'Request body too large');
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500)
    return new ApiError('invalid_input', 'Invalid request');
  if (isDatabaseUnavailable(err) || isTemporalUnavailable(err)) {
    return new ApiError(
      'service_unavailable',
      'A service this request needs is briefly unavailable; retry the same request',
      undefined,
      {
        'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
      },
    );
  }
  return new ApiError('internal_error', 'Internal error; report the requestId to support');
}
