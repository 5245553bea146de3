import type { EntityManager } from '@mikro-orm/postgresql';
import type { OpenTopupRequest } from '../../contracts/topups-contract';
import { countPendingTopups } from '../../db/orders-store';
import { OrderSchema, type Order } from '../../db/entities/all-entities';
import { ApiError } from '../../domain/errors';
import { fromDb, parseDecimal, toDecimal } from '../../domain/money';
import type { PaymentProvider } from '../../providers/payment-provider';
import { lockAccount } from './ledger';

// The worker's side of a top-up: the top-up workflow's checkout step, and the replay and unpaid-limit
// rule that the API's fast path (topup-submission.ts) applies too.

async function findByKey(em: EntityManager, accountId: string, key: string): Promise<Order | null> {
  return em.findOne(OrderSchema, { accountId, externalTopupId: key, kind: 'topup' });
}

/** The top-up a top-up workflow is keyed by: its externalTopupId, or its order id when it has none. */
export async function findTopupByWorkflowKey(em: EntityManager, accountId: string, key: string): Promise<Order | null> {
  return (await findByKey(em, accountId, key)) ?? em.findOne(OrderSchema, { id: key, accountId, kind: 'topup' });
}

function assertSameTopup(order: Order, input: { amount: string; currency: string }): void {
  if (fromDb(order.amount) !== parseDecimal(input.amount) || order.currency !== input.currency) {
    throw new ApiError(
      'idempotency_conflict',
      'This top-up id was used with a different amount or currency; use a new id',
      {
        amount: toDecimal(fromDb(order.amount)),
        currency: order.currency,
      },
    );
  }
}

const tooManyPending = (max: number) =>
  new ApiError('too_many_pending_topups', `${max} unpaid top-ups already exist; pay or let one expire first`);

/**
 * The top-up a key was used for before (a replay, or idempotency_conflict), or nothing when this
 * is a new top-up and the unpaid limit leaves room for it.
 */
export async function replayOrCheckLimit(
  em: EntityManager,
  req: { accountId: string; externalTopupId: string | null; amount: string; currency: string },
  maxPending: number,
): Promise<Order | undefined> {
  const existing = await earlierTopup(em, req);
  return (
    existing ??
    replayOrRoom({ existing: undefined, pending: await countPendingTopups(em, req.accountId) }, req, maxPending)
  );
}

/** The same rule on what was read already: the earlier top-up under the key, and the unpaid ones. */
export function replayOrRoom(
  read: { existing: Order | undefined; pending: number },
  req: { amount: string; currency: string },
  maxPending: number,
): Order | undefined {
  if (read.existing) {
    assertSameTopup(read.existing, req);
    return read.existing;
  }
  if (read.pending >= maxPending) throw tooManyPending(maxPending);
  return undefined;
}

/** The top-up this externalTopupId was used for before (idempotency_conflict if it differs), if any. */
export async function earlierTopup(
  em: EntityManager,
  req: { accountId: string; externalTopupId: string | null; amount: string; currency: string },
): Promise<Order | undefined> {
  if (!req.externalTopupId) return undefined;
  const existing = await findByKey(em, req.accountId, req.externalTopupId);
  if (existing) assertSameTopup(existing, req);
  return existing ?? undefined;
}

/**
 * The top-up workflow's checkout step: open the hosted checkout first (a provider failure leaves
 * no order behind), then store the pending top-up, with the account locked so the unpaid limit
 * and the idempotency key hold under concurrency.
 */
export async function openTopup(
  em: EntityManager,
  provider: PaymentProvider,
  req: OpenTopupRequest & { accountId: string },
  opts: { maxPending: number; paymentWindowSeconds: number; callbackUrl: string },
): Promise<{ order: Order; reused: boolean }> {
  const reused = (order: Order) => ({ order, reused: order.placementId !== req.placementId });
  const earlier = await replayOrCheckLimit(em, req, opts.maxPending);
  if (earlier) return reused(earlier);
  const checkout = await provider.createCheckout({
    reference: req.orderId,
    amount: req.amount,
    currency: req.currency,
    description: `Balance top-up of ${req.amount} ${req.currency}`,
    callbackUrl: opts.callbackUrl,
  });
  return em.transactional(async (tx) => {
    await lockAccount(tx, req.accountId);
    const earlier = await replayOrCheckLimit(tx, req, opts.maxPending);
    if (earlier) return reused(earlier);
    const order = tx.create(OrderSchema, {
      id: req.orderId,
      accountId: req.accountId,
      kind: 'topup',
      channel: 'topup',
      source: req.source,
      externalTopupId: req.externalTopupId,
      qty: 1,
      unitPrice: req.amount,
      amount: req.amount,
      currency: req.currency,
      payment: 'intent',
      status: 'pending',
      checkoutId: checkout.checkoutId,
      checkoutUrl: checkout.checkoutUrl,
      idempotencyWarning: !req.externalTopupId,
      placementId: req.placementId,
      expiresAt: new Date(Date.now() + opts.paymentWindowSeconds * 1000),
    });
    await tx.flush();
    return { order, reused: false };
  });
}
