import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ProductSchema } from '../db/entities';
import { codeLabel, ordersPlaced } from '../metrics/registry';
import { ApiError } from '../domain/errors';
import type { TemporalHandle } from '../temporal/client';
import { placeOrderUpdate, type Placement, type PlaceOrderRequest } from '../contracts/orders';
import { orderStarter } from '../temporal/starters';
import type { TimingConfig } from '../temporal/timing';
import { updateWithStart } from '../temporal/update-with-start';
import { timed, timedAt } from '../http/server-timing';
import { assertSameRequest, checkTestProductRules, createResponse, findByExternalId, findPurchaseWithCodes, type OrderCreateResponse, type PlaceOrderInput } from './orders';

export interface SubmitDeps {
  em: EntityManager;
  temporal: TemporalHandle;
  baseUrl: string;
  /** Where the order workflow's durations come from. */
  config: TimingConfig;
}

/**
 * POST /orders and MCP purchase_codes. A replay of a settled order is answered from Postgres;
 * anything else goes to the order workflow with update-with-start, where concurrent retries of
 * one externalOrderId meet and are placed once. The workflow answers with ids; the response,
 * codes and checkout link included, is read from Postgres.
 */
export async function submitOrder(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  try {
    const response = await submit(deps, input);
    if (!response.reused) ordersPlaced.inc({ product_type: response.deliveryType, payment: input.payment, outcome: response.status, code: '' });
    return response;
  } catch (err) {
    if (err instanceof ApiError && err.status < 500 && err.code !== 'invalid_input') {
      const product = await deps.em.fork().findOne(ProductSchema, { id: input.productId }).catch(() => null);
      ordersPlaced.inc({ product_type: product?.deliveryType ?? 'unknown', payment: input.payment, outcome: 'rejected', code: codeLabel(err.code) });
    }
    throw err;
  }
}

async function submit(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  checkTestProductRules(input);
  const existing = await timed('replay', () => findPurchaseWithCodes(deps.em, { accountId: input.accountId, externalOrderId: input.externalOrderId }));
  if (existing) {
    const { order, codes } = existing;
    assertSameRequest(order, input);
    const repairCheckout = input.payment === 'intent' && order.status === 'pending' && !order.checkoutUrl;
    if (!repairCheckout) {
      return createResponse(deps.em, order, { baseUrl: deps.baseUrl, reused: true, withCheckout: input.payment === 'intent', prefetched: { codesFor: order.status, codes } });
    }
  }
  const placement = await timed('engine', () => placeThroughWorkflow(deps, input));
  if (placement.outcome === 'rejected') {
    throw new ApiError(placement.rejection.code, placement.rejection.message, placement.rejection.details);
  }
  // The order with its codes, in one statement.
  const placed = await timed('read', () => findPurchaseWithCodes(deps.em.fork(), { id: placement.orderId }));
  if (!placed) throw new Error(`placed order ${placement.orderId} is not in Postgres`);
  return createResponse(deps.em, placed.order, {
    baseUrl: deps.baseUrl,
    reused: placement.reused,
    withCheckout: input.payment === 'intent',
    prefetched: { codesFor: placed.order.status, codes: placed.codes },
  });
}

async function placeThroughWorkflow(deps: SubmitDeps, input: PlaceOrderInput): Promise<Placement> {
  // One id for this request, kept across the retries below: Temporal answers a repeated update
  // id with the first outcome, and Postgres remembers which request placed the order.
  const placementId = randomUUID();
  const request: PlaceOrderRequest = {
    productId: input.productId,
    qty: input.qty,
    payment: input.payment,
    expectedUnitPrice: input.expectedUnitPrice,
    source: input.source,
    placementId,
  };
  timedAt('sent');
  return updateWithStart(deps.temporal, orderStarter(deps.temporal, deps.config, input), placeOrderUpdate, {
    args: [request],
    updateId: placementId,
    attempts: 3,
    withDeadline: true,
    // Another request's placement won the race for this externalOrderId.
    onGiveUp: async () =>
      (await findByExternalId(deps.em.fork(), input.accountId, input.externalOrderId))
        ? new ApiError('duplicate_order', 'A concurrent request for this externalOrderId raced; look the order up by externalOrderId')
        : undefined,
  });
}
