import type { EntityManager } from '@mikro-orm/postgresql';

// The operator queue (operator_queue, one row per redemption attempt handed to people): what
// waits, who holds a claim until when, and how an operator decided. Every move is a conditional
// update, so two operators racing meet in Postgres and exactly one wins.

type AttemptRef = { redemptionId: string; attempt: number };

export interface QueueRow {
  redemption_id: string;
  attempt: number;
  product_id: string;
  queued_at: Date;
  claimed_by: string | null;
  claim_expires_at: Date | null;
  /** The claim holds now (by the database's clock). */
  claim_active: boolean;
  outcome: 'fulfilled' | 'failed' | null;
  failure_code: string | null;
  holds_resources: boolean;
  decided_by: string | null;
  /** The redemption's status; the row is its current attempt's. */
  redemption_status: string;
  now: Date;
}

const ROW_SQL = `select q.redemption_id, q.attempt, q.product_id, q.queued_at, q.claimed_by, q.claim_expires_at,
    coalesce(q.claim_expires_at > now(), false) as claim_active, q.outcome, q.failure_code, q.holds_resources, q.decided_by,
    r.status as redemption_status, now() as now
  from operator_queue q join redemptions r on r.id = q.redemption_id and r.attempt = q.attempt`;

/** Queues an attempt once: a retried submission finds it already there. */
export async function enqueueAttempt(em: EntityManager, ref: AttemptRef, productId: string): Promise<void> {
  await em.execute(
    'insert into operator_queue (redemption_id, attempt, product_id) values (?, ?, ?) on conflict (redemption_id, attempt) do nothing',
    [ref.redemptionId, ref.attempt, productId],
  );
}

/** Undecided attempts of redemptions still pending or processing, oldest first. */
export async function waitingRows(em: EntityManager, limit: number): Promise<QueueRow[]> {
  return em.execute<QueueRow[]>(
    `${ROW_SQL} where q.outcome is null and r.status in ('pending', 'processing') order by q.queued_at, q.redemption_id limit ?`,
    [limit],
  );
}

/** The queue row of a redemption's current attempt. */
export async function currentRow(em: EntityManager, redemptionId: string): Promise<QueueRow | undefined> {
  const [row] = await em.execute<QueueRow[]>(`${ROW_SQL} where r.id = ?`, [redemptionId]);
  return row;
}

/** How the queue decided an attempt (for the upstream's status), whatever the redemption did since. */
export async function decisionOf(em: EntityManager, ref: AttemptRef) {
  const [row] = await em.execute<
    { outcome: 'fulfilled' | 'failed' | null; failure_code: string | null; holds_resources: boolean }[]
  >('select outcome, failure_code, holds_resources from operator_queue where redemption_id = ? and attempt = ?', [
    ref.redemptionId,
    ref.attempt,
  ]);
  return row;
}

/**
 * Takes (or, for its holder, renews) the claim on an undecided attempt: only when it is free,
 * expired or already the actor's. Returns the claim, or undefined when someone else holds it.
 */
export async function takeClaim(em: EntityManager, ref: AttemptRef, actor: string, seconds: number) {
  const [row] = await em.execute<{ claimed_by: string; claim_expires_at: Date }[]>(
    `update operator_queue set claimed_by = ?, claimed_at = now(), claim_expires_at = now() + (? * interval '1 second')
        where redemption_id = ? and attempt = ? and outcome is null
          and (claimed_by is null or claim_expires_at <= now() or claimed_by = ?)
        returning claimed_by, claim_expires_at`,
    [actor, seconds, ref.redemptionId, ref.attempt, actor],
  );
  return row;
}

/** Records the holder's decision, only while the actor's claim holds and nothing was decided. */
export async function decide(
  em: EntityManager,
  ref: AttemptRef,
  d: { actor: string; outcome: 'fulfilled' | 'failed'; failureCode: string | null; holdsResources: boolean },
): Promise<boolean> {
  const rows = await em.execute<{ attempt: number }[]>(
    `update operator_queue set outcome = ?, failure_code = ?, holds_resources = ?, decided_by = ?, decided_at = now(),
           claim_expires_at = least(claim_expires_at, now())
        where redemption_id = ? and attempt = ? and outcome is null and claimed_by = ? and claim_expires_at > now()
        returning attempt`,
    [d.outcome, d.failureCode, d.holdsResources, d.actor, ref.redemptionId, ref.attempt, d.actor],
  );
  return rows.length === 1;
}

/** The supplier let go of a failed attempt's resources; the workflow sees it at its next refresh. */
export async function releaseHeld(em: EntityManager, ref: AttemptRef): Promise<boolean> {
  const rows = await em.execute<{ attempt: number }[]>(
    `update operator_queue set holds_resources = false
        where redemption_id = ? and attempt = ? and outcome = 'failed' and holds_resources returning attempt`,
    [ref.redemptionId, ref.attempt],
  );
  return rows.length === 1;
}
