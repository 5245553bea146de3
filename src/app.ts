import express, { Router, type Express } from 'express';
import type { AppContext } from './http/context';
import { accessLog, bearerAuth, errorHandler, notFound, placementPrecheck, requestId } from './http/middleware';
import { healthz, readyz } from './http/health';
import { metricsEndpoint } from './metrics/endpoint';
import { coreMetricsUrl } from './temporal/runtime';
import { httpMetrics } from './metrics/http';
import { cleanRequest } from './http/hygiene';
import { createRegistry, openApiDocument, TAGS } from './http/openapi';
import { registerWebhooks } from './http/webhook-events';
import { apiDocs } from './pages/api-docs';
import { catalogRoutes } from './http/routers/catalog-router';
import { orderRoutes } from './http/routers/orders-router';
import { topupRoutes } from './http/routers/topups-router';
import { paymentCallbackRoutes } from './http/routers/payment-callbacks-router';
import { sandboxPaymentApi } from './providers/sandbox/sandbox-payments';
import { sandboxUpstreamApi } from './providers/sandbox/sandbox-upstream-server';
import { checkoutPages } from './pages/checkout';
import { evmCheckoutPages } from './pages/evm-checkout';
import { redemptionRoutes } from './http/routers/redemptions-router';
import { webhookRoutes } from './http/routers/webhook-router';
import { exportDownloadRoutes, exportRoutes } from './http/routers/exports-router';
import { batchBodyParser, batchRoutes } from './http/routers/batches-router';
import { redeemSite } from './pages/redeem';
import { accountArea } from './pages/account/account-routes';
import { staffConsole } from './console/console-routes';
import { ADMIN_PREFIX, adminRoutes } from './http/routers/admin-router';
import { CODEC_PREFIX, codecRoutes } from './http/routers/codec-router';
import { mcpRoutes } from './mcp/mcp-route';
import { outageLogOf } from './http/outage-log';
import { serverTiming } from './metrics/server-timing';
import { API_PREFIX } from './http/api-prefix';

export { API_PREFIX };

export function createApp(ctx: AppContext): Express {
  const app = express();
  app.disable('x-powered-by');
  // No ETag: answers are live money and order state, and the contract has no conditional requests
  // (a 304 would be an answer no client expects).
  app.set('etag', false);
  // Who the client is behind proxies (TRUST_PROXY, default loopback): what per-IP budgets count.
  app.set('trust proxy', ctx.config.TRUST_PROXY);
  const outage = outageLogOf(ctx);
  app.use(requestId, httpMetrics, accessLog(ctx), outage.watch, cleanRequest);

  app.get('/healthz', healthz(ctx));
  app.get('/readyz', readyz(ctx));
  // Metrics stay on this port only when they have none of their own (METRICS_PORT), and never in
  // production, whose config requires one: /metrics reads Postgres and tells about the business.
  if (!ctx.config.METRICS_PORT && ctx.config.NODE_ENV !== 'production')
    app.get(
      '/metrics',
      metricsEndpoint({ orm: ctx.orm, maxPendingTopups: ctx.config.MAX_PENDING_TOPUPS, coreMetricsUrl }),
    );

  const registry = createRegistry();
  // Strict routing: `/orders/` is not `/orders`; only the documented paths answer.
  const api = Router({ strict: true });
  api.use('/batches', batchBodyParser);
  api.use(express.json({ limit: '256kb' }));
  // After the body parser: its callback runs outside the request's async context.
  api.use(serverTiming(ctx.config.SERVER_TIMING));
  api.post('/orders', placementPrecheck(ctx, 'order'));
  api.post('/topup', placementPrecheck(ctx, 'topup'));
  // The key and its per-minute budget: one statement.
  api.use(bearerAuth(ctx, { name: 'api', limit: ctx.config.RATE_LIMIT_PER_MINUTE, windowSeconds: 60 }));
  catalogRoutes(api, registry, API_PREFIX, ctx);
  orderRoutes(api, registry, API_PREFIX, ctx);
  topupRoutes(api, registry, API_PREFIX, ctx);
  redemptionRoutes(api, registry, API_PREFIX, ctx);
  webhookRoutes(api, registry, API_PREFIX, ctx);
  exportRoutes(api, registry, API_PREFIX, ctx);
  batchRoutes(api, registry, API_PREFIX, ctx);
  api.use(notFound);
  // An export's download link is its own credential: served before the key check.
  const downloads = Router({ strict: true });
  exportDownloadRoutes(downloads, registry, API_PREFIX, ctx);

  // Paths carry the /wholesale/v1 prefix, so the server is the bare base URL.
  registerWebhooks(registry);
  const document = openApiDocument(registry, ctx.config.publicBaseUrl, {
    tags: TAGS.filter((t) => t.name !== 'Support').map((t) => t.name),
  });
  app.get(`${API_PREFIX}/openapi.json`, (_req, res) => {
    res.json(document);
  });
  // The API reference, rendered from the same document (public, like the document itself).
  app.use(`${API_PREFIX}/docs`, apiDocs(API_PREFIX));
  app.use(API_PREFIX, downloads, api);
  // The public redemption site behind redeemUrl: no bearer key, its own per-IP limit.
  app.use('/redeem', redeemSite(ctx));
  // The reseller account area: sign-in sessions and CSRF-protected forms, no bearer key.
  app.use('/account', accountArea(ctx));
  // The staff console: staff sign-in (password and TOTP), roles, and an audit row per action.
  app.use('/console', staffConsole(ctx));
  // The built-in sandbox payment provider (its API and hosted checkout, whose Pay button credits
  // for free) exists only while it is the configured provider; and our callback endpoint for
  // whichever provider ctx.providers.payments speaks to.
  if (ctx.config.PAYMENT_PROVIDER === 'sandbox') {
    app.use('/sandbox-pay', sandboxPaymentApi(ctx));
    app.use('/checkout', checkoutPages(ctx));
  } else {
    app.use('/checkout', evmCheckoutPages(ctx));
  }
  app.use('/payments', paymentCallbackRoutes(ctx));
  // The sandbox redemption upstream, speaking the partner protocol the service's adapter calls.
  if (ctx.providers.sandboxUpstream)
    app.use(
      '/sandbox-upstream',
      sandboxUpstreamApi({ secret: ctx.config.redemptionUpstreamSecret, upstream: ctx.providers.sandboxUpstream }),
    );
  // MCP mirror of the API (spec 4.7), authenticated and rate limited like it.
  app.use('/mcp', mcpRoutes(ctx));
  // The codec server for the Temporal UI and CLI (ADMIN_TOKEN or CODEC_TOKEN; off without both).
  app.use(CODEC_PREFIX, codecRoutes(ctx));
  // Support and ops tooling, guarded by its own ADMIN_TOKEN (off when unset).
  app.use(ADMIN_PREFIX, adminRoutes(ctx));
  app.use(notFound);
  app.use(errorHandler(ctx, outage));
  return app;
}
