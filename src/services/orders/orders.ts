import type { EntityManager } from '@mikro-orm/postgresql';
import type { PaymentMode } from '../../contracts/orders-contract';
import { IssuedCodeSchema, OrderSchema, type Order } from '../../db/entities/all-entities';
import { ApiError } from '../../domain/errors';
import { fromDb, toDecimal } from '../../domain/money';
import { TEST_PRODUCT_ID } from '../../domain/test-product';

// An order's rules and views that both sides use: the API process answers with them (submission,
// queries) and the worker's placement (order-placement.ts) checks with them.

export interface PlaceOrderInput {
  accountId: string;
  externalOrderId: string;
  productId: string;
  qty: number;
  payment: PaymentMode;
  expectedUnitPrice?: string;
  /** Where the order came from: `rest` or `mcp` (both are channel `wholesale_api`). */
  source: 'rest' | 'mcp';
  /** The API request placing it: its own retries find the order and are not told `reused`. */
  placementId?: string;
}

/** Unix seconds, as the API gives times (spec 2). */
export const unixSeconds = (d?: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

/** What an order's summary is made of. */
export type SummaryFields = Pick<
  Order,
  | 'id'
  | 'kind'
  | 'externalOrderId'
  | 'externalTopupId'
  | 'channel'
  | 'productId'
  | 'qty'
  | 'amount'
  | 'status'
  | 'deliveryType'
  | 'fulfillmentStatus'
  | 'fulfilledQuantity'
  | 'errorCode'
  | 'resolution'
>;

/** A row of GET /orders: never codes or paymentUrl (spec 2.4). */
export function orderSummary(order: SummaryFields, baseUrl: string) {
  return {
    id: order.id,
    external_order_id: order.kind === 'topup' ? (order.externalTopupId ?? null) : (order.externalOrderId ?? null),
    channel: order.channel,
    product_id: order.productId ?? null,
    qty: order.qty,
    amount: toDecimal(fromDb(order.amount)),
    status: order.status,
    deliveryType: order.deliveryType ?? null,
    fulfillmentStatus: order.fulfillmentStatus ?? null,
    fulfilledQuantity: order.fulfilledQuantity,
    errorCode: order.errorCode ?? null,
    resolution: order.resolution ?? null,
    redeemUrl: redeemUrlFor(baseUrl, order.deliveryType),
  };
}

export function redeemUrlFor(baseUrl: string, deliveryType: string | null | undefined): string | null {
  return deliveryType === 'redemption' ? `${baseUrl}/redeem` : null;
}

/**
 * Codes of an order, shown only once every item is delivered (spec 2.4). A direct-code order that
 * support refunded for its undelivered units shows the codes obtained before the refund: those
 * units were paid for and kept (see src/services/supply/procurement.ts refundUndelivered).
 */
export async function deliveredCodes(
  em: EntityManager,
  order: Pick<Order, 'id' | 'status' | 'deliveryType'>,
): Promise<string[]> {
  if (!showsCodes(order)) return [];
  const rows = await em.find(IssuedCodeSchema, { orderId: order.id, voided: false }, { orderBy: { id: 'asc' } });
  return rows.map((r) => r.code);
}

/** Whether an order in this state shows its codes (see deliveredCodes). */
export function showsCodes(order: Pick<Order, 'status' | 'deliveryType'>): boolean {
  return order.status === 'delivered' || (order.status === 'refunded' && order.deliveryType === 'direct_code');
}

/** Rules of spec 4.3 that need no database: the test product's channel, payment and qty. */
export function checkTestProductRules(input: Pick<PlaceOrderInput, 'productId' | 'qty' | 'payment' | 'source'>): void {
  if (input.productId !== TEST_PRODUCT_ID) return;
  if (input.payment !== 'balance' || input.source !== 'rest') {
    throw new ApiError(
      'api_test_balance_only',
      'The test product can only be bought through REST with payment=balance',
    );
  }
  if (input.qty !== 1) throw new ApiError('api_test_quantity', 'The test product can only be ordered with qty=1');
}

/** A replay must repeat the same productId and qty (rule 2). */
export function assertSameRequest(
  order: Pick<Order, 'productId' | 'qty'>,
  input: { productId: string; qty: number },
): void {
  if (order.productId !== input.productId || order.qty !== input.qty) {
    throw new ApiError(
      'idempotency_conflict',
      'This externalOrderId was used with a different productId or qty; use a new id',
      {
        productId: order.productId,
        qty: order.qty,
      },
    );
  }
}

/** One order (either kind) by its id, or null. */
export async function findOrder(em: EntityManager, orderId: string): Promise<Order | null> {
  return em.findOne(OrderSchema, { id: orderId });
}

/** The statuses of an order that must exist (the workflow that asks made it). */
export async function orderStatuses(
  em: EntityManager,
  orderId: string,
): Promise<{ status: string; fulfillmentStatus: string | null }> {
  const order = await em.findOneOrFail(OrderSchema, { id: orderId });
  return { status: order.status, fulfillmentStatus: order.fulfillmentStatus ?? null };
}

export async function findByExternalId(
  em: EntityManager,
  accountId: string,
  externalOrderId: string,
): Promise<Order | null> {
  return em.findOne(OrderSchema, { accountId, externalOrderId, kind: 'purchase' });
}
