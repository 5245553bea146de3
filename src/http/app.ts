import express, { Router, type Express } from 'express';
import type { AppContext } from './context';
import { accessLog, bearerAuth, errorHandler, notFound, rateLimit, requestId } from './middleware';
import { createRegistry, openApiDocument } from './openapi';
import { catalogRoutes } from './routers/catalog';
import { orderRoutes } from './routers/orders';
import { topupRoutes } from './routers/topups';
import { paymentCallbackRoutes } from './routers/payment-callbacks';
import { createPaymentProvider, sandboxPaymentRoutes } from '../providers/sandbox-payments';
import { redemptionRoutes } from './routers/redemptions';
import { webhookRoutes } from './routers/webhook';
import { redeemSite } from '../pages/redeem';
import { ADMIN_PREFIX, adminRoutes } from './routers/admin';
import { mcpRoutes } from '../mcp/route';

export const API_PREFIX = '/wholesale/v1';

export function createApp(ctx: AppContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(requestId, accessLog(ctx));

  app.get('/healthz', async (_req, res) => {
    await ctx.orm.em.fork().execute('select 1');
    res.json({ ok: true });
  });

  const registry = createRegistry();
  const api = Router();
  api.use(express.json({ limit: '256kb' }));
  api.use(bearerAuth(ctx));
  api.use(rateLimit(ctx, { name: 'api', limit: ctx.config.RATE_LIMIT_PER_MINUTE, windowSeconds: 60 }));
  catalogRoutes(api, registry, API_PREFIX, ctx);
  orderRoutes(api, registry, API_PREFIX, ctx);
  topupRoutes(api, registry, API_PREFIX, ctx);
  redemptionRoutes(api, registry, API_PREFIX, ctx);
  webhookRoutes(api, registry, API_PREFIX, ctx);
  api.use(notFound);

  // Paths carry the /wholesale/v1 prefix, so the server is the bare base URL.
  const document = openApiDocument(registry, ctx.config.publicBaseUrl);
  app.get(`${API_PREFIX}/openapi.json`, (_req, res) => {
    res.json(document);
  });
  app.use(API_PREFIX, api);
  // The public redemption site behind redeemUrl: no bearer key, its own per-IP limit.
  app.use('/redeem', redeemSite(ctx));
  // The built-in sandbox payment provider (its API and hosted checkout) and our callback endpoint.
  const sandbox = sandboxPaymentRoutes(ctx);
  app.use('/sandbox-pay', sandbox.api);
  app.use('/checkout', sandbox.pages);
  app.use('/payments', paymentCallbackRoutes(ctx, createPaymentProvider(ctx.config)));
  // MCP mirror of the API (spec 4.7), authenticated and rate limited like it.
  app.use('/mcp', mcpRoutes(ctx));
  // Support and ops tooling, guarded by its own ADMIN_TOKEN (off when unset).
  app.use(ADMIN_PREFIX, adminRoutes(ctx));
  app.use(notFound);
  app.use(errorHandler(ctx));
  return app;
}
