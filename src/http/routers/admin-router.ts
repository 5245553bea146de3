import { createHash, timingSafeEqual } from 'node:crypto';
import express, { Router, type RequestHandler } from 'express';
import { ApiError } from '../../domain/errors';
import {
  deliverOrder,
  FULFILLMENT_STATUSES,
  listSupportOrders,
  refundOrder,
  resumeOrder,
  supportOrderDetail,
  type SupportDeps,
} from '../../services/supply/support';
import type { AppContext } from '../context';
import { notFound } from '../middleware';
import { createRegistry, openApiDocument, z } from '../openapi';
import { FreeText, IdString } from '../hygiene';
import { addRoute } from '../route';
import { marginRoutes } from './admin-margins-router';
import { operatorQueueRoutes } from './operator-queue-router';
import { auditedByToken } from '../../services/accounts/audit';
import { Decimal } from '../schemas';

// The admin API for support and ops, under /admin/v1, outside the resellers' bearer keys. It is
// off unless ADMIN_TOKEN is set (every path is then 404), and takes `Authorization: Bearer
// <ADMIN_TOKEN>`. Errors use the spec's error body. Codes never appear in its answers. Every action
// is an audit row recorded as "token" (src/services/accounts/audit.ts).

export const ADMIN_PREFIX = '/admin/v1';

const digest = (s: string) => createHash('sha256').update(s).digest();

function adminAuth(ctx: AppContext): RequestHandler {
  const expected = ctx.config.ADMIN_TOKEN ? digest(ctx.config.ADMIN_TOKEN) : undefined;
  return (req, _res, next) => {
    if (!expected) throw new ApiError('not_found', `No route for ${req.method} ${req.baseUrl}${req.path}`);
    const given = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '')?.[1];
    // Compared as digests: constant time whatever the length of the guess.
    if (!given || !timingSafeEqual(digest(given), expected))
      throw new ApiError('unauthorized', 'Missing or invalid admin token');
    next();
  };
}

const SupportOrder = z
  .object({
    orderId: z.string(),
    accountId: z.string(),
    externalOrderId: z.string().nullable(),
    productId: z.string().nullable(),
    qty: z.number().int(),
    fulfilledQuantity: z.number().int(),
    remaining: z.number().int(),
    status: z.string(),
    fulfillmentStatus: z.string().nullable(),
    errorCode: z.string().nullable(),
    resolution: z.string().nullable(),
    payment: z.string(),
    unitPrice: Decimal,
    amount: Decimal,
    createdAt: z.number().int(),
    paidAt: z.number().int().nullable(),
    updatedAt: z.number().int(),
  })
  .openapi('SupportOrder');

const SupplierPurchase = z
  .object({
    supplier: z.string(),
    supplierProductId: z.string().nullable(),
    transactionId: z.string().nullable(),
    state: z.enum(['open', 'completed', 'failed', 'refused']),
    supplierStatus: z.string().nullable(),
    requested: z.number().int(),
    quantity: z.number().int().nullable(),
    units: z.number().int(),
    unitCost: z.string().nullable(),
    totalCost: z.string().nullable(),
    currency: z.string().nullable(),
    faceValue: z.string().nullable(),
    faceCurrency: z.string().nullable(),
    error: z.string().nullable(),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi('SupplierPurchase');

const SupplierPurchaseBought = SupplierPurchase.pick({
  supplier: true,
  transactionId: true,
  state: true,
  quantity: true,
  units: true,
  unitCost: true,
  totalCost: true,
  currency: true,
}).openapi('SupplierPurchaseBought');

const SupportOrderDetail = SupportOrder.extend({
  supplierPurchases: z
    .array(SupplierPurchase)
    .describe('What was bought from the supplier for this order: transaction, state, cost'),
  actions: z.array(
    z.object({
      action: z.string(),
      actor: z.string(),
      reason: z.string(),
      payload: z.record(z.string(), z.unknown()),
      createdAt: z.number().int(),
    }),
  ),
  workflow: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe('The procurement workflow state query: remaining units, rounds, last supplier error'),
}).openapi('SupportOrderDetail');

const SupportOutcome = z
  .object({
    action: z.enum(['resume', 'deliver', 'refund']),
    order: SupportOrder,
    refund: z
      .object({
        units: z.number().int().describe('Units refunded: ordered and not delivered'),
        amount: Decimal,
        requested: z.number().int().describe('Units ordered'),
        delivered: z.number().int().describe('Units delivered: their codes stay with the reseller'),
        supplierPurchases: z
          .array(SupplierPurchaseBought)
          .describe('What was bought from the supplier for this order (empty when the supplier reports no purchases)'),
      })
      .nullable(),
  })
  .openapi('SupportOutcome');

const Who = z.object({
  actor: IdString(255).pipe(z.string().trim().min(1)).describe('Who acts (recorded)'),
  reason: FreeText(2000).pipe(z.string().trim().min(1)).describe('Why (recorded)'),
});
const ActionBody = Who.strict().openapi('SupportAction');
const DeliverBody = Who.extend({ codes: z.array(IdString(255)).min(1).max(1000) })
  .strict()
  .openapi('SupportDeliver');
const OrderParams = z.object({ id: IdString(128) });

export function adminRoutes(ctx: AppContext): Router {
  const router = Router({ strict: true });
  const registry = createRegistry('admin');
  const deps = (): SupportDeps => ({ em: ctx.orm.em.fork(), temporal: ctx.temporal });
  router.use(adminAuth(ctx));
  router.use(express.json({ limit: '512kb' }));

  addRoute(
    router,
    registry,
    ADMIN_PREFIX,
    {
      method: 'get',
      path: '/orders',
      operationId: 'listSupportOrders',
      tag: 'Support',
      auth: 'admin',
      summary: 'Direct-code orders by fulfillment status, longest waiting first',
      query: z.object({
        fulfillmentStatus: z.enum(FULFILLMENT_STATUSES).optional(),
        accountId: z.uuid().optional(),
        limit: z.coerce.number().int().min(1).max(200).default(50),
      }),
      response: z.object({ orders: z.array(SupportOrder) }),
    },
    async ({ query }) => ({ orders: await listSupportOrders(ctx.orm.em.fork(), query) }),
  );

  addRoute(
    router,
    registry,
    ADMIN_PREFIX,
    {
      method: 'get',
      path: '/orders/:id',
      operationId: 'getSupportOrder',
      tag: 'Support',
      auth: 'admin',
      summary: 'One direct-code order with its support actions and procurement state',
      params: OrderParams,
      response: SupportOrderDetail,
      errors: ['not_found'],
    },
    async ({ params }) => supportOrderDetail(deps(), params.id),
  );

  addRoute(
    router,
    registry,
    ADMIN_PREFIX,
    {
      method: 'post',
      path: '/orders/:id/resume',
      operationId: 'resumeSupportOrder',
      tag: 'Support',
      auth: 'admin',
      summary: 'Try the supplier again for a needs_attention order',
      params: OrderParams,
      body: ActionBody,
      response: SupportOutcome,
      errors: ['not_found'],
    },
    async ({ params, body, res }) =>
      auditedByToken(
        ctx.orm.em,
        res.locals.requestId,
        { action: 'order.resume', orderId: params.id, reason: body.reason, typedActor: body.actor },
        () => resumeOrder(deps(), params.id, body),
      ),
  );

  addRoute(
    router,
    registry,
    ADMIN_PREFIX,
    {
      method: 'post',
      path: '/orders/:id/deliver',
      operationId: 'deliverSupportOrder',
      tag: 'Support',
      auth: 'admin',
      summary: 'Deliver codes obtained by hand for the missing units',
      params: OrderParams,
      body: DeliverBody,
      response: SupportOutcome,
      errors: ['not_found'],
    },
    async ({ params, body, res }) =>
      auditedByToken(
        ctx.orm.em,
        res.locals.requestId,
        {
          action: 'order.deliver',
          orderId: params.id,
          reason: body.reason,
          typedActor: body.actor,
          details: { codes: body.codes.length },
        },
        () => deliverOrder(deps(), params.id, body),
      ),
  );

  addRoute(
    router,
    registry,
    ADMIN_PREFIX,
    {
      method: 'post',
      path: '/orders/:id/refund',
      operationId: 'refundSupportOrder',
      tag: 'Support',
      auth: 'admin',
      summary: 'Refund the undelivered units to the balance; obtained codes go to the reseller',
      params: OrderParams,
      body: ActionBody,
      response: SupportOutcome,
      errors: ['not_found'],
    },
    async ({ params, body, res }) =>
      auditedByToken(
        ctx.orm.em,
        res.locals.requestId,
        { action: 'order.refund', orderId: params.id, reason: body.reason, typedActor: body.actor },
        () => refundOrder(deps(), params.id, body),
      ),
  );

  operatorQueueRoutes(router, registry, ADMIN_PREFIX, ctx);
  marginRoutes(router, registry, ADMIN_PREFIX, ctx);

  // Paths carry the /admin/v1 prefix, so the server is the service's base URL.
  const document = openApiDocument(registry, ctx.config.publicBaseUrl, {
    title: 'Wholesale admin API (support and ops)',
    tags: ['Support'],
  });
  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  router.use(notFound);
  return router;
}
