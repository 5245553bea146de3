import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { OrderSchema, type Order } from '../db/entities';
import { countPendingTopups } from '../db/orders-store';
import { newId } from '../codes';
import { ApiError } from '../domain/errors';
import { fromDb, parseDecimal, toDecimal } from '../domain/money';
import type { PaymentProvider } from '../providers/payments';
import type { TemporalHandle } from '../temporal/client';
import { topupStarter } from '../temporal/starters';
import type { TimingConfig } from '../temporal/timing';
import { openTopupUpdate, type OpenTopupRequest, type TopupCreateResponse } from '../contracts/topups';
import { updateWithStart } from '../temporal/update-with-start';
import { lockAccount } from './ledger';
import { rateLimited, topupsCreated } from '../metrics/registry';
import { hitRateLimit } from './rate-limit';

export const IDEMPOTENCY_WARNING =
  'No idempotency key was sent: this request cannot be retried safely. Send Idempotency-Key or externalTopupId; a future version will require it.';

export interface TopupInput {
  accountId: string;
  externalTopupId: string | null;
  amount: string;
  currency: 'USDT' | 'USDC';
  source: 'rest' | 'mcp';
}

export interface TopupLimits {
  perHour: number;
  maxPending: number;
}

export function topupResponse(order: Order, reused: boolean): TopupCreateResponse {
  const pendingUrl = order.status === 'pending' ? order.checkoutUrl ?? null : null;
  return {
    orderId: order.id,
    externalTopupId: order.externalTopupId ?? null,
    amount: toDecimal(fromDb(order.amount)),
    status: order.status as TopupCreateResponse['status'],
    checkoutUrl: pendingUrl,
    paymentUrl: pendingUrl,
    reused,
    ...(order.idempotencyWarning ? { idempotencyWarning: IDEMPOTENCY_WARNING } : {}),
  };
}

async function findByKey(em: EntityManager, accountId: string, key: string): Promise<Order | null> {
  return em.findOne(OrderSchema, { accountId, externalTopupId: key, kind: 'topup' });
}

/** The top-up a top-up workflow is keyed by: its externalTopupId, or its order id when it has none. */
export async function findTopupByWorkflowKey(em: EntityManager, accountId: string, key: string): Promise<Order | null> {
  return (await findByKey(em, accountId, key)) ?? em.findOne(OrderSchema, { id: key, accountId, kind: 'topup' });
}

function assertSameTopup(order: Order, input: { amount: string; currency: string }): void {
  if (fromDb(order.amount) !== parseDecimal(input.amount) || order.currency !== input.currency) {
    throw new ApiError('idempotency_conflict', 'This top-up id was used with a different amount or currency; use a new id', {
      amount: toDecimal(fromDb(order.amount)),
      currency: order.currency,
    });
  }
}

const tooManyPending = (max: number) =>
  new ApiError('too_many_pending_topups', `${max} unpaid top-ups already exist; pay or let one expire first`);

/**
 * The top-up a key was used for before (a replay, or idempotency_conflict), or nothing when this
 * is a new top-up and the unpaid limit leaves room for it.
 */
async function replayOrCheckLimit(
  em: EntityManager,
  req: { accountId: string; externalTopupId: string | null; amount: string; currency: string },
  maxPending: number,
): Promise<Order | undefined> {
  if (req.externalTopupId) {
    const existing = await findByKey(em, req.accountId, req.externalTopupId);
    if (existing) {
      assertSameTopup(existing, req);
      return existing;
    }
  }
  if ((await countPendingTopups(em, req.accountId)) >= maxPending) throw tooManyPending(maxPending);
  return undefined;
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

/**
 * POST /topup and MCP create_topup: the hourly quota (replays count), the replay fast path, then
 * the top-up workflow through update-with-start.
 */
export async function submitTopup(
  deps: { em: EntityManager; temporal: TemporalHandle; limits: TopupLimits; config: TimingConfig },
  input: TopupInput,
): Promise<TopupCreateResponse> {
  if (parseDecimal(input.amount) <= 0) throw new ApiError('invalid_input', 'amount must be greater than 0');
  const quota = await hitRateLimit(deps.em, `topup:${input.accountId}`, deps.limits.perHour, 3600);
  if (!quota.allowed) {
    rateLimited.inc({ limit: 'topups' });
    throw new ApiError('rate_limited', `At most ${deps.limits.perHour} top-up requests per hour`, undefined, { 'Retry-After': String(quota.retryAfter) });
  }
  const earlier = await replayOrCheckLimit(deps.em, input, deps.limits.maxPending);
  if (earlier) return topupResponse(earlier, true);

  const orderId = newId('ord');
  const key = input.externalTopupId ?? orderId;
  // One id for this request, kept across retries (see order-submission.ts).
  const placementId = randomUUID();
  const request: OpenTopupRequest = {
    orderId, externalTopupId: input.externalTopupId, amount: input.amount, currency: input.currency, source: input.source, placementId,
  };
  // Bounded like an order's placement: no worker polling is a retryable 503, not a hang.
  const opening = await updateWithStart(deps.temporal, topupStarter(deps.temporal, deps.config, { accountId: input.accountId, key }), openTopupUpdate, {
    args: [request],
    updateId: placementId,
    attempts: 3,
    withDeadline: true,
  });
  if (opening.outcome === 'rejected') throw new ApiError(opening.rejection.code, opening.rejection.message, opening.rejection.details);
  if (!opening.reused) topupsCreated.inc({ currency: input.currency });
  return topupResponse(await deps.em.fork().findOneOrFail(OrderSchema, { id: opening.orderId }), opening.reused);
}
