import { Gauge } from 'prom-client';
import type { RequestHandler } from 'express';
import type { Orm } from '../db/orm';
import { registry } from './registry';
import { readStateGauges } from './state';

const stateUp = new Gauge({
  name: 'wholesale_metrics_state_up',
  help: '1 when the gauges read from Postgres at this scrape are current, 0 when Postgres did not answer',
  registers: [registry],
});

/**
 * GET /metrics in Prometheus text format: the service's registry, with the Postgres-backed
 * gauges read now, followed by the Temporal core's own worker and client metrics when this
 * process exports them (one scrape target per process; the composition root says where the
 * Temporal runtime serves them, so this module need not know the Temporal side).
 */
export function metricsEndpoint(deps: {
  orm: Orm;
  maxPendingTopups: number;
  coreMetricsUrl: () => string | undefined;
}): RequestHandler {
  return async (_req, res) => {
    try {
      await readStateGauges(deps.orm.em.fork(), deps.maxPendingTopups);
      stateUp.set(1);
    } catch {
      stateUp.set(0);
    }
    let text = await registry.metrics();
    const core = deps.coreMetricsUrl();
    if (core) {
      const answer = await fetch(core, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
      if (answer?.ok) text += `\n${await answer.text()}`;
    }
    res.set({ 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' }).send(text);
  };
}
