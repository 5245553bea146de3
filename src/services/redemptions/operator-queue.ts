import type { EntityManager } from '@mikro-orm/postgresql';
import { ProductSchema } from '../../db/entities/all-entities';
import { currentRow, decide, releaseHeld, takeClaim, waitingRows, type QueueRow } from '../../db/operator-queue-store';
import { attemptRow, setUpstreamDeliverable } from '../../db/redemption-attempts-store';
import { insertSupportAction } from '../../db/support-store';
import { ApiError } from '../../domain/errors';
import { maskDeliverable } from '../../domain/redeem-info';
import type { UpstreamFailureCode } from '../../providers/redemption-upstream';
import type { TemporalHandle } from '../../temporal/client';
import type { KeyRing } from '../../temporal/codec';
import {
  operatorDecisionSignal,
  redemptionWorkflowId,
  type AttemptRef,
  type OperatorDecision,
} from '../../contracts/redemptions-contract';
import { upstreamSubmission } from './redemption-attempts';

// The operator queue (REDEMPTION_UPSTREAM=operators), shared by `npx wholesale redemptions ...`
// and the admin API: list what waits, claim one (one operator at a time, the claim expires),
// then fulfil or fail it. Postgres holds the facts (operator_queue, support_actions for who and
// why); the redemption workflow is signalled with the decision and finishes the attempt. Redeem
// details are shown in one place only: the claim's answer, to the claim's holder.

export interface QueueDeps {
  em: EntityManager;
  temporal: TemporalHandle;
  keys: KeyRing;
  claimSeconds: number;
}

export interface Who {
  actor: string;
  reason: string;
}

const unix = (d: Date | string | null) => (d ? Math.floor(new Date(d).getTime() / 1000) : null);

/** A claim that holds now, or null (a lapsed one is free again). */
const claimOf = (row: QueueRow) =>
  row.claim_active && row.claimed_by ? { holder: row.claimed_by, expiresAt: unix(row.claim_expires_at)! } : null;

async function productName(em: EntityManager, productId: string): Promise<string> {
  const product = await em.findOne(ProductSchema, { id: productId });
  return product ? (product.nameEn ?? product.name) : productId;
}

/** What waits for an operator, oldest first: product, age and claim, never the redeem details. */
export async function listQueue(em: EntityManager, limit = 50) {
  const rows = await waitingRows(em, limit);
  const names = new Map<string, string>();
  for (const id of new Set(rows.map((r) => r.product_id))) names.set(id, await productName(em, id));
  return rows.map((row) => ({
    redemptionId: row.redemption_id,
    attempt: row.attempt,
    productId: row.product_id,
    productName: names.get(row.product_id)!,
    status: row.redemption_status,
    queuedAt: unix(row.queued_at)!,
    ageSeconds: Math.max(0, Math.floor((new Date(row.now).getTime() - new Date(row.queued_at).getTime()) / 1000)),
    claim: claimOf(row),
  }));
}

/** The current attempt's queue row, when the redemption is waiting in the queue. */
async function queuedAttempt(em: EntityManager, redemptionId: string): Promise<QueueRow> {
  const row = await currentRow(em, redemptionId);
  if (!row) throw new ApiError('not_found', `Redemption ${redemptionId} is not in the operator queue`);
  return row;
}

function conflict(row: QueueRow): ApiError {
  if (row.outcome || (row.redemption_status !== 'pending' && row.redemption_status !== 'processing')) {
    return new ApiError(
      'claim_conflict',
      `Redemption ${row.redemption_id} was already decided (${row.outcome ?? row.redemption_status})`,
      {
        redemptionId: row.redemption_id,
        outcome: row.outcome ?? row.redemption_status,
        decidedBy: row.decided_by,
      },
    );
  }
  const claim = claimOf(row);
  if (!claim)
    return new ApiError('claim_conflict', `Redemption ${row.redemption_id} is not claimed: claim it first`, {
      redemptionId: row.redemption_id,
    });
  return new ApiError(
    'claim_conflict',
    `Redemption ${row.redemption_id} is claimed by ${claim.holder} until ${new Date(claim.expiresAt * 1000).toISOString()}`,
    { redemptionId: row.redemption_id, holder: claim.holder, expiresAt: claim.expiresAt },
  );
}

/**
 * Claims a waiting redemption for `who.actor` (or renews the actor's own claim) for
 * `claimSeconds`, and answers with the redeem details, decrypted: the one place they are shown.
 * Someone else's live claim is 409 claim_conflict naming its holder and expiry.
 */
export async function claimRedemption(deps: Omit<QueueDeps, 'temporal'>, redemptionId: string, who: Who) {
  return deps.em.transactional(async (tx) => {
    const row = await queuedAttempt(tx, redemptionId);
    const ref: AttemptRef = { redemptionId, attempt: row.attempt };
    if (row.redemption_status !== 'pending' && row.redemption_status !== 'processing') throw conflict(row);
    const claim = await takeClaim(tx, ref, who.actor, deps.claimSeconds);
    if (!claim) throw conflict((await currentRow(tx, redemptionId))!);
    await insertSupportAction(tx, {
      subjectId: redemptionId,
      action: 'redemption.claim',
      actor: who.actor,
      reason: who.reason,
      payload: { attempt: row.attempt, expiresAt: unix(claim.claim_expires_at) },
    });
    const { submission } = await upstreamSubmission(tx, deps.keys, ref);
    return {
      redemptionId,
      attempt: row.attempt,
      productId: row.product_id,
      productName: submission.productName,
      claim: { holder: claim.claimed_by, expiresAt: unix(claim.claim_expires_at)! },
      redeemInfo: submission.redeemInfo,
    };
  });
}

export type OperatorOutcome =
  | { outcome: 'fulfilled'; deliverable: string }
  | { outcome: 'failed'; failureCode: UpstreamFailureCode; holdsResources: boolean };

/**
 * The claim holder's decision: recorded in Postgres (the queue row, the masked deliverable, the
 * support action) only while the actor's claim holds, then signalled to the attempt's workflow,
 * which finishes it (state, webhook). Repeating a decision the actor already made re-sends the
 * signal, so a signal lost after the commit is recovered by running the command again.
 */
export async function decideQueued(
  deps: QueueDeps,
  redemptionId: string,
  who: Who,
  decision: OperatorOutcome,
): Promise<AttemptRef> {
  const failed = decision.outcome === 'failed';
  const ref = await deps.em.transactional(async (tx) => {
    const row = await queuedAttempt(tx, redemptionId);
    const ref: AttemptRef = { redemptionId, attempt: row.attempt };
    const repeated =
      row.outcome === decision.outcome && row.decided_by === who.actor && row.redemption_status === 'processing';
    if (repeated) return ref;
    const decided = await decide(tx, ref, {
      actor: who.actor,
      outcome: decision.outcome,
      failureCode: failed ? decision.failureCode : null,
      holdsResources: failed && decision.holdsResources,
    });
    if (!decided) throw conflict(row);
    if (!failed) await setUpstreamDeliverable(tx, ref, await masked(tx, deps.keys, ref, decision.deliverable));
    await insertSupportAction(tx, {
      subjectId: redemptionId,
      action: failed ? 'redemption.fail' : 'redemption.fulfil',
      actor: who.actor,
      reason: who.reason,
      payload: failed
        ? { attempt: ref.attempt, failureCode: decision.failureCode, holdsResources: decision.holdsResources }
        : { attempt: ref.attempt },
    });
    return ref;
  });
  const signal: OperatorDecision = {
    decision: failed ? 'reject' : 'fulfill',
    actor: who.actor,
    // The reason stays in support_actions; history gets a masked copy.
    reason: await masked(deps.em, deps.keys, ref, who.reason),
    queue: failed ? { failureCode: decision.failureCode, holdsResources: decision.holdsResources } : {},
  };
  await deps.temporal.client.workflow
    .getHandle(redemptionWorkflowId(ref.redemptionId, ref.attempt))
    .signal(operatorDecisionSignal, signal);
  return ref;
}

/** Operator text with everything the customer submitted masked out of it. */
async function masked(em: EntityManager, keys: KeyRing, ref: AttemptRef, text: string): Promise<string> {
  const { submission } = await upstreamSubmission(em, keys, ref);
  const stored = (await attemptRow(em, ref))?.redeem_info ?? {};
  return maskDeliverable(text, [...Object.values(submission.redeemInfo), ...Object.values(stored)]);
}

/**
 * The supplier let go of a failed attempt's resources (an operator checked): the workflow sees it
 * at its next refresh and a resubmission stops being retry_conflict.
 */
export async function releaseQueued(em: EntityManager, redemptionId: string, who: Who): Promise<AttemptRef> {
  return em.transactional(async (tx) => {
    const row = await queuedAttempt(tx, redemptionId);
    const ref: AttemptRef = { redemptionId, attempt: row.attempt };
    if (!(await releaseHeld(tx, ref))) {
      throw new ApiError('claim_conflict', `Redemption ${redemptionId} holds no supplier resources`, {
        redemptionId,
        outcome: row.outcome,
      });
    }
    await insertSupportAction(tx, {
      subjectId: redemptionId,
      action: 'redemption.release',
      actor: who.actor,
      reason: who.reason,
      payload: { attempt: ref.attempt },
    });
    return ref;
  });
}
