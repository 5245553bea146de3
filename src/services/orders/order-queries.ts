import type { EntityManager } from '@mikro-orm/postgresql';
import { OrderSchema, ProductSchema } from '../../db/entities/all-entities';
import { evmCheckoutReceipts } from '../../db/evm-store';
import { ledgerPage } from '../../db/ledger-store';
import { scaledToCents, toScaled } from '../../domain/token-amounts';
import { ApiError } from '../../domain/errors';
import { fromDb, toDecimal } from '../../domain/money';
import { decodeCursor, pageOf, rowNumberPosition, type CursorScope, type Page } from '../cursor';
import { transactionView } from '../payments/ledger';
import { deliveredCodes, orderSummary, unixSeconds } from './orders';

export async function orderDetail(em: EntityManager, accountId: string, id: string, baseUrl: string) {
  const order = await em.findOne(OrderSchema, { id, accountId });
  if (!order) throw new ApiError('not_found', `Order ${id} not found`);
  const product = order.productId ? await em.findOne(ProductSchema, { id: order.productId }) : null;
  return {
    ...orderSummary(order, baseUrl),
    order_number: String(order.orderNumber),
    unit_price: toDecimal(fromDb(order.unitPrice)),
    currency: order.currency,
    created_at: unixSeconds(order.createdAt),
    paid_at: unixSeconds(order.paidAt),
    product_name: product ? (product.nameEn ?? product.name) : null,
    // Only the owner sees the checkout link, and only while it can still be paid (rule 10).
    paymentUrl: order.status === 'pending' ? (order.checkoutUrl ?? null) : null,
    codes: await deliveredCodes(em, order),
    ...(order.status === 'pending' && order.checkoutId ? await paymentProgress(em, order.checkoutId) : {}),
  };
}

/** Confirmed and missing amounts of a pending order at the self-hosted EVM checkout (none for other providers). */
async function paymentProgress(
  em: EntityManager,
  checkoutId: string,
): Promise<{ amountReceived?: string; amountMissing?: string }> {
  const receipts = await evmCheckoutReceipts(em, checkoutId);
  if (!receipts) return {};
  const received = receipts.transfers.reduce((sum, t) => sum + toScaled(BigInt(t.units), t.decimals), 0n);
  const cents = Number(scaledToCents(received));
  const amount = fromDb(receipts.amount);
  return { amountReceived: toDecimal(cents), amountMissing: toDecimal(Math.max(0, amount - cents)) };
}

export async function listOrders(
  em: EntityManager,
  q: {
    accountId: string;
    externalOrderId?: string;
    limit: number;
    cursor?: string;
    baseUrl: string;
    cursorSecret: string;
  },
): Promise<Page<ReturnType<typeof orderSummary>>> {
  const scope: CursorScope = {
    secret: q.cursorSecret,
    accountId: q.accountId,
    list: 'orders',
    filters: { e: q.externalOrderId ?? null },
  };
  const where: Record<string, unknown> = { accountId: q.accountId };
  if (q.externalOrderId !== undefined)
    where.$or = [{ externalOrderId: q.externalOrderId }, { externalTopupId: q.externalOrderId }];
  if (q.cursor) where.orderNumber = { $lt: decodeCursor(scope, q.cursor, rowNumberPosition) };
  const rows = await em.find(OrderSchema, where, { orderBy: { orderNumber: 'desc' }, limit: q.limit + 1 });
  return pageOf(
    rows,
    q.limit,
    (o) => orderSummary(o, q.baseUrl),
    (o) => Number(o.orderNumber),
    scope,
  );
}

export async function listTransactions(
  em: EntityManager,
  q: { accountId: string; type?: string; limit: number; cursor?: string; cursorSecret: string },
) {
  const scope: CursorScope = {
    secret: q.cursorSecret,
    accountId: q.accountId,
    list: 'transactions',
    filters: { t: q.type ?? null },
  };
  const beforeId = q.cursor ? decodeCursor(scope, q.cursor, rowNumberPosition) : undefined;
  const rows = await ledgerPage(em, { accountId: q.accountId, type: q.type, beforeId, limit: q.limit + 1 });
  return pageOf(rows, q.limit, transactionView, (r) => Number(r.id), scope);
}
