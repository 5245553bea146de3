import type { EntityManager } from '@mikro-orm/postgresql';
import { OrderSchema, ProductSchema, type Order } from '../db/entities';
import { fromDb, toDecimal, type Cents } from '../domain/money';
import { recordEvent } from './events';
import { addSpending, applyBalanceChange, lockAccount } from './ledger';
import { fulfilPaidOrder } from './orders';

// What happens to a hosted-checkout order (intent purchase or top-up) when its payment is
// confirmed, when its window passes, or when the payer abandons the checkout. Every step is a
// conditional state change, so a retried activity or a callback and a status sync arriving
// together apply it once.

export type SettleOutcome = 'settled' | 'already_settled' | 'not_found';

export interface PaymentSettings {
  levelThresholds: readonly Cents[];
  publicBaseUrl: string;
}

async function lockOrder(em: EntityManager, orderId: string): Promise<Order | null> {
  await em.execute('select id from orders where id = ? for update', [orderId]);
  return em.findOne(OrderSchema, { id: orderId }, { refresh: true });
}

/**
 * Confirms a payment: a top-up credits the balance (`topup` ledger row, `topup.credited`); an
 * intent order counts as spending and is fulfilled. Pending and expired orders both settle: a
 * late payment is honoured.
 */
export async function settlePayment(
  em: EntityManager,
  orderId: string,
  settings: PaymentSettings,
  onSettled: (order: Order) => void = () => undefined,
): Promise<SettleOutcome> {
  let settled: Order | undefined;
  const outcome = await em.transactional(async (tx): Promise<SettleOutcome> => {
    const peek = await tx.findOne(OrderSchema, { id: orderId });
    if (!peek) return 'not_found';
    // Same lock order as placement: account first, then the order.
    const account = await lockAccount(tx, peek.accountId);
    const order = (await lockOrder(tx, orderId))!;
    if (order.status !== 'pending' && order.status !== 'expired') return 'already_settled';
    const amount = fromDb(order.amount);
    const now = new Date();
    if (order.kind === 'topup') {
      // USDC is credited 1:1 to the USDT balance.
      await applyBalanceChange(
        tx,
        account,
        { type: 'topup', amount, orderId: order.id, idempotencyKey: `topup:${order.id}`, note: `top-up ${order.currency}` },
        settings.levelThresholds,
      );
      order.status = 'delivered';
      order.paidAt = now;
      order.deliveredAt = now;
      order.updatedAt = now;
      await tx.flush();
      await recordEvent(tx, order.accountId, 'topup.credited', {
        orderId: order.id,
        externalTopupId: order.externalTopupId ?? null,
        amount: toDecimal(amount),
        currency: order.currency,
      });
      settled = order;
      return 'settled';
    }
    await addSpending(tx, account, amount, settings.levelThresholds);
    const product = await tx.findOneOrFail(ProductSchema, { id: order.productId! });
    if (product.stockMode === 'inventory' && !(await hasInventory(tx, product.id, order.qty))) {
      // Paid late for stock that is gone: keep the money on record and hand it to support.
      order.status = 'paid';
      order.paidAt = now;
      order.updatedAt = now;
      order.errorCode = 'delivery_needs_attention';
      order.resolution = 'manual_review';
      await tx.flush();
      settled = order;
      return 'settled';
    }
    await fulfilPaidOrder(tx, order, product, settings.publicBaseUrl);
    settled = order;
    return 'settled';
  });
  // After the commit: what is counted really happened.
  if (settled) onSettled(settled);
  return outcome;
}

async function hasInventory(em: EntityManager, productId: string, qty: number): Promise<boolean> {
  const [row] = await em.execute<{ n: string }[]>('select count(*) as n from stock_codes where product_id = ? and order_id is null', [productId]);
  return Number(row.n) >= qty;
}

/** The window passed unpaid: pending becomes expired (and stops counting against limits and stock). */
export async function expirePayment(em: EntityManager, orderId: string): Promise<Order['status'] | undefined> {
  const rows = await em.execute<{ status: Order['status'] }[]>(
    `update orders set status = 'expired', updated_at = now(),
       fulfillment_status = case when fulfillment_status is not null then 'expired' else null end
     where id = ? and status = 'pending' returning status`,
    [orderId],
  );
  if (rows[0]) return rows[0].status;
  return (await em.findOne(OrderSchema, { id: orderId }))?.status;
}

/** The payer abandoned the checkout: the link is dead, so a replay in intent mode can repair it. */
export async function checkoutAbandoned(em: EntityManager, checkoutId: string): Promise<void> {
  await em.execute(`update orders set checkout_url = null, updated_at = now() where checkout_id = ? and status = 'pending'`, [checkoutId]);
}

/** Attaches a fresh checkout to a pending order that lost its link (spec 4.3 rule 4). */
export async function attachCheckout(em: EntityManager, orderId: string, checkout: { checkoutId: string; checkoutUrl: string }): Promise<boolean> {
  const rows = await em.execute(
    `update orders set checkout_id = ?, checkout_url = ?, updated_at = now() where id = ? and status = 'pending' and checkout_url is null returning id`,
    [checkout.checkoutId, checkout.checkoutUrl, orderId],
  );
  return rows.length > 0;
}

export async function paymentState(em: EntityManager, orderId: string): Promise<{ status: Order['status']; checkoutId: string | null; expiresAt: number | null; kind: Order['kind'] }> {
  const order = await em.findOneOrFail(OrderSchema, { id: orderId });
  return {
    status: order.status,
    checkoutId: order.checkoutId ?? null,
    expiresAt: order.expiresAt ? order.expiresAt.getTime() : null,
    kind: order.kind,
  };
}
