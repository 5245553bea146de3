import type { EntityManager } from '@mikro-orm/postgresql';
import { redemptionOutcomes, supportActionsUnverified } from '../../metrics/registry';
import { decisionOf } from '../../db/operator-queue-store';
import { ApiError } from '../../domain/errors';
import { takeSupportRequest } from '../supply/support-requests';
import { ProductSchema } from '../../db/entities/all-entities';
import {
  attemptRow,
  deleteSecrets,
  finishAttemptRow,
  finishRedemptionRow,
  fulfillmentModeOf,
  insertSecrets,
  markProcessing,
  productIdOfRedemption,
  redemptionEventFacts,
  releaseAttempt,
  secretsRow,
  setUpstreamDeliverable,
  setUpstreamRef,
} from '../../db/redemption-attempts-store';
import { maskDeliverable } from '../../domain/redeem-info';
import type { UpstreamStatus } from '../../providers/redemption-upstream';
import { seal, unseal, type KeyRing } from '../../temporal/codec';
import {
  decisionSubject,
  redemptionEventId,
  type AttemptOutcome,
  type AttemptRef,
  type DecisionRef,
  type UpstreamState,
} from '../../contracts/redemptions-contract';
import { recordEvent } from '../webhooks/events';

// The steps of one redemption attempt, run by redemptionWorkflow's activities (and, for test
// codes, within the submission). Each is a conditional update that a retried activity or a
// replayed workflow can run again without effect.

const unix = (d: Date | null | undefined) => (d ? Math.floor(new Date(d).getTime() / 1000) : null);

/**
 * pending → processing. Returns undefined while the attempt is not visible (its submission has
 * not committed, or rolled back), `finished` when it already reached a terminal state.
 */
export async function beginAttempt(
  em: EntityManager,
  ref: AttemptRef,
): Promise<{ state: 'ready' | 'finished'; manual: boolean } | undefined> {
  return em.transactional(async (tx) => {
    const attempt = await attemptRow(tx, ref, true);
    if (!attempt) return undefined;
    const manual = (await fulfillmentModeOf(tx, ref.redemptionId)) === 'manual';
    if (attempt.status === 'fulfilled' || attempt.status === 'failed') return { state: 'finished', manual };
    if (attempt.status === 'pending') await markProcessing(tx, ref);
    return { state: 'ready', manual };
  });
}

const secretsAad = (ref: AttemptRef) => `redemption-secrets:${ref.redemptionId}:${ref.attempt}`;

/**
 * Stages an attempt's password values, encrypted, for its upstream call (in the submission's
 * transaction): the workflow is given only the attempt's id, never the values.
 */
export async function stageSecrets(
  em: EntityManager,
  keys: KeyRing,
  ref: AttemptRef,
  secrets: Record<string, string>,
): Promise<void> {
  if (Object.keys(secrets).length === 0) return;
  const { keyId, data } = seal(keys, secretsAad(ref), Buffer.from(JSON.stringify(secrets), 'utf8'));
  await insertSecrets(em, ref, keyId, data);
}

/** The staged password values of an attempt ({} once it ended, or when there were none). */
async function stagedSecrets(em: EntityManager, keys: KeyRing, ref: AttemptRef): Promise<Record<string, string>> {
  const row = await secretsRow(em, ref);
  return row
    ? (JSON.parse(unseal(keys, row.key_id, secretsAad(ref), row.data).toString('utf8')) as Record<string, string>)
    : {};
}

/** What the upstream is sent for an attempt: the stored normalized values plus the staged password values. */
export async function upstreamSubmission(em: EntityManager, keys: KeyRing, ref: AttemptRef) {
  const secrets = await stagedSecrets(em, keys, ref);
  const attempt = await attemptRow(em, ref);
  if (!attempt) throw new Error(`attempt ${ref.redemptionId}:${ref.attempt} not found`);
  const product = await em.findOneOrFail(ProductSchema, { id: await productIdOfRedemption(em, ref.redemptionId) });
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

/**
 * The upstream's status of an attempt, with its completion note kept on the attempt row, already
 * masked against everything the customer submitted, instead of being returned: what the workflow
 * gets carries no customer data, and the note never rests in Postgres with a password in it.
 */
export async function refreshUpstream(
  em: EntityManager,
  keys: KeyRing,
  ref: AttemptRef,
  status: UpstreamStatus,
): Promise<UpstreamState> {
  if (status.state !== 'fulfilled') return status;
  const attempt = await attemptRow(em, ref);
  const secrets = await stagedSecrets(em, keys, ref);
  const note =
    status.deliverable === undefined || status.deliverable === null
      ? null
      : maskDeliverable(status.deliverable, [...Object.values(attempt?.redeem_info ?? {}), ...Object.values(secrets)]);
  await setUpstreamDeliverable(em, ref, note);
  return { state: 'fulfilled' };
}

/** Records the upstream's reference; from now on the attempt holds supplier resources. */
export async function recordUpstreamRef(em: EntityManager, ref: AttemptRef, upstreamRef: string): Promise<void> {
  await setUpstreamRef(em, ref, upstreamRef);
}

/**
 * Whether Postgres backs an operator's decision: the operator queue's row decided the same way,
 * or support's request for it (taken, so it acts once). Counted when it does not.
 */
async function decisionOnRecord(
  em: EntityManager,
  ref: AttemptRef,
  outcome: AttemptOutcome,
  decision: DecisionRef,
): Promise<boolean> {
  if (decision.queue) {
    if ((await decisionOf(em, ref))?.outcome === outcome.status) return true;
    supportActionsUnverified.inc({ action: 'redemption.queue' });
    return false;
  }
  const action = outcome.status === 'fulfilled' ? 'redemption.fulfill' : 'redemption.reject';
  try {
    await takeSupportRequest(em, decision.requestId ?? undefined, decisionSubject(ref), action);
    return true;
  } catch (err) {
    if (err instanceof ApiError) return false;
    throw err;
  }
}

/**
 * processing → fulfilled or failed, once per attempt: the attempt row, the redemption (if this
 * is still its current attempt) and the terminal event in one transaction. The deliverable is
 * masked against everything the customer submitted. Idempotent: a finished attempt is left alone.
 * An outcome decided by an operator is recorded only when Postgres backs the decision
 * (`refused` otherwise, and nothing changes).
 */
export async function finishAttempt(
  em: EntityManager,
  keys: KeyRing,
  ref: AttemptRef,
  outcome: AttemptOutcome,
  decision?: DecisionRef,
): Promise<'finished' | 'refused'> {
  let refused = false;
  const finished = await em.transactional(async (tx) => {
    const attempt = await attemptRow(tx, ref, true);
    if (!attempt || attempt.status === 'fulfilled' || attempt.status === 'failed') return false;
    if (decision && !(await decisionOnRecord(tx, ref, outcome, decision))) {
      refused = true;
      return false;
    }
    const secrets = await stagedSecrets(tx, keys, ref);
    // The staged values have served their purpose: they go with the attempt's end.
    await deleteSecrets(tx, ref);
    const fulfilled = outcome.status === 'fulfilled';
    const note = fulfilled ? (outcome.deliverable ?? attempt.upstream_deliverable ?? 'Fulfilled.') : null;
    const deliverable =
      note === null ? null : maskDeliverable(note, [...Object.values(attempt.redeem_info), ...Object.values(secrets)]);
    const failureCode = fulfilled ? null : outcome.failureCode;
    await finishAttemptRow(tx, ref, {
      status: outcome.status,
      failureCode,
      holdsResources: !fulfilled && outcome.holdsResources,
    });
    const updated = await finishRedemptionRow(tx, ref, {
      status: outcome.status,
      failureCode,
      deliverable,
      fulfilledAt: fulfilled ? new Date() : null,
    });
    if (!updated) return false;
    await recordRedemptionEvent(tx, ref, outcome.status, failureCode, unix(updated.fulfilled_at));
    return true;
  });
  if (finished) redemptionOutcomes.inc({ outcome: outcome.status });
  return refused ? 'refused' : 'finished';
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
  const row = await redemptionEventFacts(em, ref.redemptionId);
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
  await releaseAttempt(em, ref);
}
