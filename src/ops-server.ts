import type { Server } from 'node:http';
import express from 'express';
import type { AppContext } from './http/context';
import { healthz, readyz } from './http/health';
import { errorHandler, notFound, requestId } from './http/middleware';
import { metricsEndpoint } from './metrics/endpoint';
import { coreMetricsUrl } from './temporal/runtime';

/**
 * The operations port (METRICS_PORT): /metrics, /healthz and /readyz for Prometheus and the
 * orchestrator, on an address of their own so the public API port never shows them. A worker
 * process has no other HTTP server, so this is how it is scraped and probed.
 */
export async function startOpsServer(
  ctx: Pick<AppContext, 'orm' | 'temporal' | 'worker' | 'config' | 'logger' | 'providers'>,
  port: number,
  host: string,
): Promise<Server> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId);
  app.get(
    '/metrics',
    metricsEndpoint({ orm: ctx.orm, maxPendingTopups: ctx.config.MAX_PENDING_TOPUPS, coreMetricsUrl }),
  );
  app.get('/healthz', healthz(ctx));
  app.get('/readyz', readyz(ctx));
  app.use(notFound);
  app.use(errorHandler(ctx as AppContext));
  return new Promise((ok, fail) => {
    const server = app.listen(port, host, () => ok(server));
    server.once('error', fail);
  });
}
