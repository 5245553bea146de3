import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { listOrders, listTransactions, orderDetail } from '../../services/orders/order-queries';
import { submitOrder } from '../../services/orders/order-submission';
import type { AppContext } from '../context';
import { z } from '../openapi';
import { IdString } from '../hygiene';
import { addRoute } from '../route';
import { Cursor, Decimal, Limit, OrderCreate, OrderDetail, OrderSummary, Transaction } from '../schemas';

export const CreateOrderBody = z
  .object({
    externalOrderId: IdString(64),
    productId: IdString(128),
    qty: z.number().int().min(1).max(1000),
    // Optional with its default applied in parsing: a published `default` would make generated
    // clients require the field.
    payment: z
      .enum(['balance', 'intent'])
      .optional()
      .transform((v) => v ?? 'balance')
      .openapi({ description: 'Defaults to `balance`' }),
    expectedUnitPrice: Decimal.optional(),
  })
  .strict()
  .openapi('CreateOrder');

export function orderRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  const baseUrl = ctx.config.publicBaseUrl;
  const cursorSecret = ctx.config.CURSOR_SECRET;

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/orders',
      operationId: 'createOrder',
      scope: 'orders',
      tag: 'Orders',
      summary: 'Place an order (idempotent on externalOrderId)',
      body: CreateOrderBody,
      response: OrderCreate,
      errors: [
        'insufficient_balance',
        'not_found',
        'duplicate_order',
        'idempotency_conflict',
        'out_of_stock',
        'insufficient_stock',
        'stock_unavailable',
        'fulfillment_unavailable',
        'price_changed',
        'api_test_quantity',
        'api_test_balance_only',
        'payment_provider_error',
        'payment_provider_timeout',
      ],
    },
    async ({ body, principal }) =>
      submitOrder(
        {
          em: ctx.orm.em.fork(),
          temporal: ctx.temporal,
          baseUrl,
          config: ctx.config,
          admission: ctx.admission,
          answerKey: ctx.answerKey,
        },
        { ...body, accountId: principal.account.id, source: 'rest' },
      ),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/orders',
      operationId: 'listOrders',
      tag: 'Orders',
      summary: 'Purchase and top-up orders, newest first',
      query: z.object({ externalOrderId: IdString(64).optional(), limit: Limit, cursor: Cursor }),
      response: z.object({ orders: z.array(OrderSummary), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
      errors: ['invalid_cursor'],
    },
    async ({ query, principal }) => {
      const page = await listOrders(ctx.orm.em.fork(), {
        ...query,
        accountId: principal.account.id,
        baseUrl,
        cursorSecret,
      });
      return { orders: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore };
    },
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/orders/:id',
      operationId: 'getOrder',
      tag: 'Orders',
      summary: 'Order detail; codes only when delivered',
      params: z.object({ id: IdString(128) }),
      response: OrderDetail,
      errors: ['not_found'],
    },
    async ({ params, principal }) => orderDetail(ctx.orm.em.fork(), principal.account.id, params.id, baseUrl),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/transactions',
      operationId: 'listTransactions',
      tag: 'Orders',
      summary: 'Ledger rows with signed amounts and balanceAfter, newest first',
      query: z.object({
        limit: Limit,
        cursor: Cursor,
        type: z.enum(['topup', 'purchase', 'refund', 'adjust']).optional(),
      }),
      response: z.object({
        transactions: z.array(Transaction),
        nextCursor: z.string().nullable(),
        hasMore: z.boolean(),
      }),
      errors: ['invalid_cursor'],
    },
    async ({ query, principal }) => {
      const page = await listTransactions(ctx.orm.em.fork(), {
        ...query,
        accountId: principal.account.id,
        cursorSecret,
      });
      return { transactions: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore };
    },
  );
}
