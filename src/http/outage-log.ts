import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/db-errors';
import { pingDatabase } from '../db/orm';
import { ApiError } from '../domain/errors';
import { isTemporalUnavailable } from '../temporal/temporal-errors';
import type { AppContext } from './context';

// How a dependency outage reads in the log. During a Postgres or Temporal outage every request
// that needs it is a retryable 503, hundreds a minute under load: one line each would bury the one
// that matters. So: one `error` line when the dependency goes down, the 503s as `warn` lines
// sampled (the first, then one per dependency per 10 s, with how many were deferred since the
// last line), and one `info` line when it answers again. Recovery is noticed by asking the
// dependency, at most every 2 s, while requests keep finishing.

export type Dependency = 'database' | 'temporal';

const SAMPLE_MS = 10_000;
const PROBE_EVERY_MS = 2_000;
const PROBE_TIMEOUT_MS = 2_000;

interface Outage {
  since: number;
  /** Requests deferred since the outage began. */
  deferred: number;
  /** Requests deferred since the last warn line. */
  unlogged: number;
  lastLineAt: number;
  lastProbeAt: number;
  probing: boolean;
}

/** Which dependency a retryable 503 waited for. */
export function dependencyOf(err: unknown): Dependency {
  if (isDatabaseUnavailable(err)) return 'database';
  if (isTemporalUnavailable(err)) return 'temporal';
  // A workflow's activity that found Postgres out of reach answers `service_unavailable` through
  // Temporal (src/temporal/safe-failures.ts): the database, seen from the worker.
  return err instanceof ApiError && err.code === 'service_unavailable' ? 'database' : 'temporal';
}

export class OutageLog {
  private readonly outages = new Map<Dependency, Outage>();

  constructor(private readonly deps: { logger: Logger; probes: Record<Dependency, () => Promise<unknown>> }) {}

  /** A request was answered a retryable 503 because `dependency` is out of reach. */
  deferred(dependency: Dependency, fields: { err: unknown; requestId?: string }): void {
    const now = Date.now();
    let outage = this.outages.get(dependency);
    if (!outage) {
      outage = { since: now, deferred: 0, unlogged: 0, lastLineAt: 0, lastProbeAt: now, probing: false };
      this.outages.set(dependency, outage);
      this.deps.logger.error(
        { dependency },
        `${dependency} is unavailable: requests that need it are answered 503 (retryable) until it is back`,
      );
    }
    outage.deferred++;
    outage.unlogged++;
    if (now - outage.lastLineAt < SAMPLE_MS) return;
    this.deps.logger.warn(
      { dependency, deferred: outage.unlogged, err: fields.err, requestId: fields.requestId },
      'requests deferred: a dependency is unavailable',
    );
    outage.lastLineAt = now;
    outage.unlogged = 0;
  }

  /** As each request finishes: a dependency that was out of reach is asked again, at most every 2 s. */
  readonly watch: RequestHandler = (_req, res, next) => {
    if (this.outages.size > 0) res.on('finish', () => this.checkRecovery());
    next();
  };

  private checkRecovery(): void {
    const now = Date.now();
    for (const [dependency, outage] of this.outages) {
      if (outage.probing || now - outage.lastProbeAt < PROBE_EVERY_MS) continue;
      outage.probing = true;
      outage.lastProbeAt = now;
      void withTimeout(this.deps.probes[dependency]()).then(
        () => {
          if (this.outages.get(dependency) !== outage) return;
          this.outages.delete(dependency);
          this.deps.logger.info(
            { dependency, downSeconds: Math.round((Date.now() - outage.since) / 1000), deferred: outage.deferred },
            `${dependency} is back`,
          );
        },
        () => {
          outage.probing = false;
        },
      );
    }
  }
}

/** The probes of this process's dependencies: a trivial query, the Temporal server's health check. */
export function outageLogOf(ctx: Pick<AppContext, 'logger' | 'orm' | 'temporal'>): OutageLog {
  return new OutageLog({
    logger: ctx.logger,
    probes: {
      database: () => pingDatabase(ctx.orm),
      temporal: () =>
        ctx.temporal.connection.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () =>
          ctx.temporal.connection.healthService.check({}),
        ),
    },
  });
}

function withTimeout(probe: Promise<unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('probe timed out')), PROBE_TIMEOUT_MS);
  });
  return Promise.race([probe, timeout]).finally(() => clearTimeout(timer));
}
