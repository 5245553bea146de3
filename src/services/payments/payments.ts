import type { EntityManager } from '@mikro-orm/postgresql';
import { unsoldStockCount } from '../../db/catalog-store';
import { OrderSchema, ProductSchema, type Order } from '../../db/entities/all-entities';
import { attachCheckoutRow, clearCheckoutUrl, expireIfPending, lockOrderRow } from '../../db/orders-store';
import {
  evmPaymentReached,
  hasPaymentConfirmation,
  markPaymentSettled,
  recordPaymentConfirmation,
} from '../../db/payment-facts-store';
import { ApiError } from '../../domain/errors';
import type { PaymentCallback } from '../../providers/payment-provider';
import { fromDb, toDecimal, type Cents } from '../../domain/money';
import { recordEvent } from '../webhooks/events';
import { addSpending, applyBalanceChange, lockAccount } from './ledger';
import { fulfilPaidOrder } from '../orders/order-delivery';

// What happens to a hosted-checkout order (intent purchase or top-up) when its payment is
// confirmed, when its window passes, or when the payer abandons the checkout. Every step is a
// conditional state change, so a retried activity or a callback and a status sync arriving
// together apply it once. A payment is settled only on a fact in Postgres, never on the word of
// the message that asked: a Temporal signal can be sent by anyone who reaches the cluster.

/** `unverified`: nothing on record shows the payment; nothing changed. */
export type SettleOutcome = 'settled' | 'already_settled' | 'not_found' | 'unverified';

/** Whether Postgres shows the order's checkout paid (read inside the settling transaction). */
export type PaymentFact = (em: EntityManager, orderId: string) => Promise<boolean>;

/**
 * What proves a payment for each provider: the EVM checkout's own record of confirmed transfers
 * reaching the amount (written by its watch from the chain), or, for a provider that calls back,
 * a confirmation the service recorded after the provider's signature or status answer.
 */
export function paymentFactFor(provider: 'sandbox' | 'evm'): PaymentFact {
  return provider === 'evm' ? evmPaymentReached : hasPaymentConfirmation;
}

/** The provider's status endpoint said this checkout was paid: the service's own record of it. */
export async function recordStatusConfirmation(
  em: EntityManager,
  c: { checkoutId: string; orderId: string },
): Promise<void> {
  await recordPaymentConfirmation(em, { ...c, source: 'status' });
}

/**
 * A provider callback whose signature verified: a payment is recorded as confirmed (the fact
 * settlement looks for) and the order returned when it can still be settled; an abandonment kills
 * the link. An unknown checkout is not_found.
 */
export async function acceptCallback(em: EntityManager, notice: PaymentCallback): Promise<Order | undefined> {
  const order = await em.findOne(OrderSchema, { checkoutId: notice.checkoutId });
  if (!order) throw new ApiError('not_found', 'Unknown checkout');
  if (notice.status === 'abandoned') {
    // The link is dead, so a replay in intent mode can repair it.
    await clearCheckoutUrl(em, notice.checkoutId);
    return undefined;
  }
  await recordPaymentConfirmation(em, { checkoutId: notice.checkoutId, orderId: order.id, source: 'callback' });
  return order.status === 'pending' || order.status === 'expired' ? order : undefined;
}

export interface PaymentSettings {
  levelThresholds: readonly Cents[];
  publicBaseUrl: string;
  paid: PaymentFact;
}

async function lockOrder(em: EntityManager, orderId: string): Promise<Order | null> {
  await lockOrderRow(em, orderId);
  return em.findOne(OrderSchema, { id: orderId }, { refresh: true });
}

/**
 * Confirms a payment: a top-up credits the balance (`topup` ledger row, `topup.credited`); an
 * intent order counts as spending and is fulfilled. Pending and expired orders both settle: a
 * late payment is honoured. Only when `settings.paid` finds the payment on record, in the same
 * transaction; otherwise `unverified` and nothing changes.
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
    if (order.status !== 'pending' && order.status !== 'expired') {
      // A confirmation recorded while the order was being settled stays open otherwise.
      await markPaymentSettled(tx, order.id);
      return 'already_settled';
    }
    if (!(await settings.paid(tx, order.id))) return 'unverified';
    await markPaymentSettled(tx, order.id);
    const amount = fromDb(order.amount);
    const now = new Date();
    if (order.kind === 'topup') {
      // USDC is credited 1:1 to the USDT balance.
      await applyBalanceChange(
        tx,
        account,
        {
          type: 'topup',
          amount,
          orderId: order.id,
          idempotencyKey: `topup:${order.id}`,
          note: `top-up ${order.currency}`,
        },
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
  return (await unsoldStockCount(em, productId)) >= qty;
}

/** The window passed unpaid: pending becomes expired (and stops counting against limits and stock). */
export async function expirePayment(em: EntityManager, orderId: string): Promise<Order['status'] | undefined> {
  const expired = await expireIfPending(em, orderId);
  if (expired) return expired;
  return (await em.findOne(OrderSchema, { id: orderId }))?.status;
}

/** Attaches a fresh checkout to a pending order that lost its link (spec 4.3 rule 4). */
export async function attachCheckout(
  em: EntityManager,
  orderId: string,
  checkout: { checkoutId: string; checkoutUrl: string },
): Promise<boolean> {
  return attachCheckoutRow(em, orderId, checkout);
}

export async function paymentState(
  em: EntityManager,
  orderId: string,
): Promise<{ status: Order['status']; checkoutId: string | null; expiresAt: number | null; kind: Order['kind'] }> {
  const order = await em.findOneOrFail(OrderSchema, { id: orderId });
  return {
    status: order.status,
    checkoutId: order.checkoutId ?? null,
    expiresAt: order.expiresAt ? order.expiresAt.getTime() : null,
    kind: order.kind,
  };
}
