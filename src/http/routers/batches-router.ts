import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import express, { type Router } from 'express';
import { MAX_BATCH_LINES } from '../../contracts/batches-contract';
import { getBatch, listBatchLines } from '../../services/orders/batch-queries';
import { submitBatch } from '../../services/orders/batch-submission';
import type { AppContext } from '../context';
import { ErrorBody, z } from '../openapi';
import { IdString } from '../hygiene';
import { addRoute } from '../route';
import { Cursor, Decimal, Limit } from '../schemas';
import { CreateOrderBody } from './orders-router';

// Many orders in one request (beyond the spec's 1.4.0): a batch of lines, each an order with its
// own externalOrderId, accepted at once and placed line by line by its workflow, each by the rules
// of POST /orders (balance payment).

/** A batch of 5,000 lines is about 0.6 MB of JSON; the API's other bodies stay under 256 kB. */
export const batchBodyParser = express.json({ limit: '2mb' });

export const BatchLine = z
  .object({
    externalOrderId: CreateOrderBody.shape.externalOrderId,
    productId: CreateOrderBody.shape.productId,
    qty: CreateOrderBody.shape.qty,
    expectedUnitPrice: CreateOrderBody.shape.expectedUnitPrice,
  })
  .strict()
  .openapi('BatchLine', { description: 'One order, as the body of POST /orders with payment `balance`' });

export const CreateBatchBody = z
  .object({
    externalBatchId: IdString(64).openapi({
      description: 'Your id for this batch: the same id with the same lines is the same batch',
    }),
    lines: z.array(BatchLine).min(1).max(MAX_BATCH_LINES),
  })
  .strict()
  .openapi('CreateBatch');

const BatchBody = z
  .object({
    batchId: z.string(),
    externalBatchId: z.string(),
    status: z.enum(['running', 'completed']),
    total: z.number().int().min(1),
    pending: z.number().int().min(0).describe('Lines not placed yet'),
    placed: z.number().int().min(0).describe('Lines that placed an order, or found theirs (reused)'),
    rejected: z.number().int().min(0).describe('Lines POST /orders would have refused, with its error code'),
    createdAt: z.number().int(),
    completedAt: z.number().int().nullable(),
  })
  .openapi('Batch');

const BatchLineResult = z
  .object({
    line: z.number().int().min(1).describe('Its position in the batch, from 1'),
    externalOrderId: z.string(),
    productId: z.string(),
    qty: z.number().int(),
    expectedUnitPrice: Decimal.nullable(),
    status: z.enum(['pending', 'placed', 'rejected']),
    orderId: z.string().nullable(),
    reused: z
      .boolean()
      .nullable()
      .describe('As in the order response: the externalOrderId had an order already (an earlier order or line)'),
    order: z
      .object({
        status: z.enum(['pending', 'paid', 'delivered', 'expired', 'refunded']),
        amount: Decimal,
        deliveryType: z.enum(['redemption', 'direct_code']).nullable(),
        fulfillmentStatus: z.string().nullable(),
        fulfilledQuantity: z.number().int().min(0),
        codes: z.array(z.string()).describe('As GET /orders/{id} shows them: only once every item is delivered'),
        redeemUrl: z.string().nullable(),
      })
      .nullable()
      .describe('The order as it stands now'),
    rejection: z
      .object({
        error: ErrorBody.shape.error,
        message: z.string(),
        details: z.record(z.string(), z.unknown()).optional(),
      })
      .nullable()
      .describe('Why the line placed no order: the error POST /orders answers with'),
  })
  .openapi('BatchLineResult');

export function batchRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/batches',
      operationId: 'createBatch',
      tag: 'Batches',
      scope: 'orders',
      summary: `Up to ${MAX_BATCH_LINES} orders at once, accepted now, placed in line order`,
      description:
        'Each line is placed as POST /orders would place it sent after the lines before it: a repeated externalOrderId is a replay (`reused`) ' +
        'or an `idempotency_conflict`, a line the balance does not cover is `insufficient_balance`. Poll GET /batches/{id} (or await `batch.completed`).',
      body: CreateBatchBody,
      response: BatchBody.extend({ reused: z.boolean() }).openapi('BatchCreated'),
      errors: ['idempotency_conflict'],
    },
    async ({ body, principal }) =>
      submitBatch(
        { em: ctx.orm.em.fork(), temporal: ctx.temporal, config: ctx.config },
        { ...body, accountId: principal.account.id },
      ),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/batches/:id',
      operationId: 'getBatch',
      tag: 'Batches',
      scope: 'read',
      summary: 'A batch and its progress',
      params: z.object({ id: IdString(128) }),
      response: BatchBody,
      errors: ['not_found'],
    },
    async ({ params, principal }) => getBatch(ctx.orm.em.fork(), principal.account.id, params.id),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/batches/:id/lines',
      operationId: 'listBatchLines',
      tag: 'Batches',
      scope: 'read',
      summary: "A batch's lines in order, with each outcome and its order's codes once delivered",
      params: z.object({ id: IdString(128) }),
      query: z.object({ limit: Limit, cursor: Cursor }),
      response: z.object({ lines: z.array(BatchLineResult), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
      errors: ['not_found', 'invalid_cursor'],
    },
    async ({ params, query, principal }) => {
      const page = await listBatchLines(ctx.orm.em.fork(), {
        accountId: principal.account.id,
        batchId: params.id,
        ...query,
        cursorSecret: ctx.config.CURSOR_SECRET,
        baseUrl: ctx.config.publicBaseUrl,
      });
      return { lines: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore };
    },
  );
}
