import type { EntityManager } from '@mikro-orm/postgresql';
import { ProductSchema } from '../db/entities';
import { maskDeliverable } from '../domain/redeem-info';
import { redemptionEventId, type AttemptOutcome, type AttemptRef, type RedemptionStatus } from '../temporal/redemptions';
import { recordEvent } from './events';

// The steps of one redemption attempt, run by redemptionWorkflow's activities (and, for test
// codes, within the submission). Each is a conditional update that a retried activity or a
// replayed workflow can run again without effect.

const unix = (d: Date | null | undefined) => (d ? Math.floor(new Date(d).getTime() / 1000) : null);

interface AttemptRow {
  status: RedemptionStatus;
  redeem_info: Record<string, string>;
  upstream_ref: string | null;
}

async function attemptOf(em: EntityManager, ref: AttemptRef, lock = false): Promise<AttemptRow | undefined> {
  const [row] = await em.execute<AttemptRow[]>(
    `select status, redeem_info, upstream_ref from redemption_attempts where redemption_id = ? and attempt = ?${lock ? ' for update' : ''}`,
    [ref.redemptionId, ref.attempt],
  );
  return row;
}

/**
 * pending → processing. Returns undefined while the attempt is not visible (its submission has
 * not committed, or rolled back), `finished` when it already reached a terminal state.
 */
export async function beginAttempt(em: EntityManager, ref: AttemptRef): Promise<{ state: 'ready' | 'finished'; manual: boolean } | undefined> {
  return em.transactional(async (tx) => {
    const attempt = await attemptOf(tx, ref, true);
    if (!attempt) return undefined;
    const [{ fulfillment_mode: mode }] = await tx.execute<{ fulfillment_mode: string }[]>(
      `select p.fulfillment_mode from redemptions r join issued_codes ic on ic.id = r.code_id join products p on p.id = ic.product_id
        where r.id = ?`,
      [ref.redemptionId],
    );
    const manual = mode === 'manual';
    if (attempt.status === 'fulfilled' || attempt.status === 'failed') return { state: 'finished', manual };
    if (attempt.status === 'pending') {
      await tx.execute(`update redemption_attempts set status = 'processing' where redemption_id = ? and attempt = ?`, [ref.redemptionId, ref.attempt]);
      await tx.execute(`update redemptions set status = 'processing', updated_at = now() where id = ? and attempt = ? and status = 'pending'`, [
        ref.redemptionId, ref.attempt,
      ]);
    }
    return { state: 'ready', manual };
  });
}

/** What the upstream is sent for an attempt: the stored normalized values plus the password values. */
export async function upstreamSubmission(em: EntityManager, ref: AttemptRef, secrets: Record<string, string> = {}) {
  const attempt = await attemptOf(em, ref);
  if (!attempt) throw new Error(`attempt ${ref.redemptionId}:${ref.attempt} not found`);
  const [row] = await em.execute<{ product_id: string }[]>(
    'select ic.product_id from redemptions r join issued_codes ic on ic.id = r.code_id where r.id = ?',
    [ref.redemptionId],
  );
  const product = await em.findOneOrFail(ProductSchema, { id: row.product_id });
  return {
    upstreamRef: attempt.upstream_ref,
    submission: {
      key: `${ref.redemptionId}:${ref.attempt}`,
      productId: product.id,
      productName: product.nameEn ?? product.name,
      redeemInfo: { ...attempt.redeem_info, ...secrets },
      manual: product.fulfillmentMode === 'manual',
    },
  };
}

/** Records the upstream's reference; from now on the attempt holds supplier resources. */
export async function recordUpstreamRef(em: EntityManager, ref: AttemptRef, upstreamRef: string): Promise<void> {
  await em.execute(
    'update redemption_attempts set upstream_ref = ?, holds_resources = true where redemption_id = ? and attempt = ? and upstream_ref is null',
    [upstreamRef, ref.redemptionId, ref.attempt],
  );
}

/**
 * processing → fulfilled or failed, once per attempt: the attempt row, the redemption (if this
 * is still its current attempt) and the terminal event in one transaction. The deliverable is
 * masked against everything the customer submitted. Idempotent: a finished attempt is left alone.
 */
export async function finishAttempt(em: EntityManager, ref: AttemptRef, outcome: AttemptOutcome, secrets: Record<string, string> = {}): Promise<void> {
  await em.transactional(async (tx) => {
    const attempt = await attemptOf(tx, ref, true);
    if (!attempt || attempt.status === 'fulfilled' || attempt.status === 'failed') return;
    const fulfilled = outcome.status === 'fulfilled';
    const deliverable = fulfilled ? maskDeliverable(outcome.deliverable, [...Object.values(attempt.redeem_info), ...Object.values(secrets)]) : null;
    const failureCode = fulfilled ? null : outcome.failureCode;
    await tx.execute(
      `update redemption_attempts set status = ?, failure_code = ?, holds_resources = ?, finished_at = now()
        where redemption_id = ? and attempt = ?`,
      [outcome.status, failureCode, !fulfilled && outcome.holdsResources, ref.redemptionId, ref.attempt],
    );
    const [updated] = await tx.execute<{ fulfilled_at: Date | null }[]>(
      `update redemptions set status = ?, failure_code = ?, deliverable = ?, fulfilled_at = ?, updated_at = now()
        where id = ? and attempt = ? returning fulfilled_at`,
      [outcome.status, failureCode, deliverable, fulfilled ? new Date() : null, ref.redemptionId, ref.attempt],
    );
    if (!updated) return;
    await recordRedemptionEvent(tx, ref, outcome.status, failureCode, unix(updated.fulfilled_at));
  });
}

/**
 * `redemption.fulfilled` / `redemption.failed` with the spec's id shape, for codes of wholesale
 * API orders only; never the deliverable or the submitted details (spec part 6).
 */
async function recordRedemptionEvent(
  em: EntityManager,
  ref: AttemptRef,
  status: 'fulfilled' | 'failed',
  failureCode: string | null,
  fulfilledAt: number | null,
): Promise<void> {
  const [row] = await em.execute<{ account_id: string; code: string; order_id: string; product_id: string; external_order_id: string | null; channel: string }[]>(
    `select r.account_id, ic.code, ic.order_id, ic.product_id, o.external_order_id, o.channel
       from redemptions r join issued_codes ic on ic.id = r.code_id join orders o on o.id = ic.order_id where r.id = ?`,
    [ref.redemptionId],
  );
  if (!row || row.channel !== 'wholesale_api') return;
  const type = status === 'fulfilled' ? 'redemption.fulfilled' : 'redemption.failed';
  await recordEvent(
    em,
    row.account_id,
    type,
    {
      orderId: row.order_id,
      externalOrderId: row.external_order_id,
      productId: row.product_id,
      redemptionId: ref.redemptionId,
      code: row.code,
      status,
      failureCode,
      retryable: status === 'failed',
      fulfilledAt,
    },
    redemptionEventId(ref.redemptionId, ref.attempt, type),
  );
}

/** The upstream let go of a failed attempt: a resubmission is allowed again. */
export async function releaseAttemptResources(em: EntityManager, ref: AttemptRef): Promise<void> {
  await em.execute(
    `update redemption_attempts set holds_resources = false where redemption_id = ? and attempt = ? and status = 'failed'`,
    [ref.redemptionId, ref.attempt],
  );
}
