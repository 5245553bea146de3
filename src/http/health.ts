import type { RequestHandler } from 'express';
import { pingDatabase } from '../db/orm';
import { ApiError, errorBody } from '../domain/errors';
import type { AppContext } from './context';
import type { Providers } from '../providers/all-providers';

const PROBE_TIMEOUT_MS = 2000;

/** True when `probe` settles successfully within the timeout. */
async function answers(probe: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      probe().then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

type HealthContext = Pick<AppContext, 'orm' | 'temporal' | 'worker'> & { providers?: Pick<Providers, 'evm'> };

/**
 * Each part this process depends on, asked now: Postgres, the Temporal server, the in-process
 * worker and, with the EVM checkout, each chain's nodes. `blocking` is what makes the process
 * unready; a chain that is down, lags or is unverified (its tokens' decimals() not read yet, so
 * nothing on it is credited) only delays payments (the watch retries), so it is listed as
 * degraded, by chain id, and the API stays in rotation.
 */
async function parts(ctx: HealthContext) {
  const [database, temporal, chains] = await Promise.all([
    answers(() => pingDatabase(ctx.orm)),
    answers(() =>
      ctx.temporal.connection.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () =>
        ctx.temporal.connection.healthService.check({}),
      ),
    ),
    ctx.providers?.evm?.health(),
  ]);
  const worker = ctx.worker?.health() ?? null;
  const blocking = [
    ...(database ? [] : ['database']),
    ...(temporal ? [] : ['temporal']),
    ...(worker && worker.phase !== 'running' ? ['worker'] : []),
  ];
  const degraded = [...blocking, ...(chains ?? []).filter((c) => c.state !== 'up').map((c) => `chain:${c.chainId}`)];
  return {
    blocking,
    degraded,
    database: database ? 'up' : 'down',
    temporal: temporal ? 'up' : 'down',
    worker,
    ...(chains ? { chains: Object.fromEntries(chains.map((c) => [c.chainId, { name: c.name, state: c.state }])) } : {}),
  };
}

/**
 * GET /healthz: liveness. The process answers 200 while it runs, whatever depends on it; the
 * body says which part is degraded, so an operator sees at once what to look at.
 */
export function healthz(ctx: HealthContext): RequestHandler {
  return async (_req, res) => {
    const { blocking: _blocking, ...p } = await parts(ctx);
    res.set('Cache-Control', 'no-store').json({ ok: true, status: p.degraded.length === 0 ? 'ok' : 'degraded', ...p });
  };
}

/**
 * GET /readyz: readiness. 200 only when Postgres answers, the Temporal client is connected and,
 * where this process runs one, the worker is running; otherwise 503 (retryable, the spec's
 * error body) naming what is missing, so a load balancer sends traffic elsewhere until it is back.
 */
export function readyz(ctx: HealthContext): RequestHandler {
  return async (_req, res) => {
    const { blocking, ...p } = await parts(ctx);
    res.set('Cache-Control', 'no-store');
    if (blocking.length === 0) return void res.json({ ready: true, ...p });
    res
      .status(503)
      .json(
        errorBody(
          new ApiError('service_unavailable', `Not ready: ${blocking.join(', ')} unavailable`, { ready: false, ...p }),
          res.locals.requestId,
        ),
      );
  };
}
