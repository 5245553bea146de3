import type { EntityManager } from '@mikro-orm/postgresql';
import type { RedemptionAttempt } from './entities/all-entities';

type RedemptionStatus = RedemptionAttempt['status'];
/** One attempt of a redemption (the workflows' AttemptRef). */
type AttemptRef = { redemptionId: string; attempt: number };

// The attempts of a redemption (redemption_attempts, one row per submission), the password
// values staged for an attempt's upstream call (redemption_secrets, encrypted), and the moves of
// the redemption row that follow them.

export interface AttemptRow {
  status: RedemptionStatus;
  redeem_info: Record<string, string>;
  upstream_ref: string | null;
  upstream_deliverable: string | null;
}

/** `lock` holds the attempt row for the rest of the caller's transaction. */
export async function attemptRow(em: EntityManager, ref: AttemptRef, lock = false): Promise<AttemptRow | undefined> {
  const [row] = await em.execute<AttemptRow[]>(
    `select status, redeem_info, upstream_ref, upstream_deliverable from redemption_attempts where redemption_id = ? and attempt = ?${lock ? ' for update' : ''}`,
    [ref.redemptionId, ref.attempt],
  );
  return row;
}

/** Opens an attempt, pending, with the normalized redeemInfo it was submitted with. */
export async function insertAttempt(
  em: EntityManager,
  ref: AttemptRef,
  redeemInfo: Record<string, string>,
): Promise<void> {
  await em.execute(
    `insert into redemption_attempts (redemption_id, attempt, status, redeem_info) values (?, ?, 'pending', ?::jsonb)`,
    [ref.redemptionId, ref.attempt, JSON.stringify(redeemInfo)],
  );
}

/** The fulfillment mode of the product whose code the redemption redeems. */
export async function fulfillmentModeOf(em: EntityManager, redemptionId: string): Promise<string> {
  const [{ fulfillment_mode: mode }] = await em.execute<{ fulfillment_mode: string }[]>(
    `select p.fulfillment_mode from redemptions r join issued_codes ic on ic.id = r.code_id join products p on p.id = ic.product_id
        where r.id = ?`,
    [redemptionId],
  );
  return mode;
}

/** pending → processing: the attempt, then the redemption if this is still its current, pending attempt. */
export async function markProcessing(em: EntityManager, ref: AttemptRef): Promise<void> {
  await em.execute(`update redemption_attempts set status = 'processing' where redemption_id = ? and attempt = ?`, [
    ref.redemptionId,
    ref.attempt,
  ]);
  await em.execute(
    `update redemptions set status = 'processing', updated_at = now() where id = ? and attempt = ? and status = 'pending'`,
    [ref.redemptionId, ref.attempt],
  );
}

export async function insertSecrets(em: EntityManager, ref: AttemptRef, keyId: string, data: Buffer): Promise<void> {
  await em.execute('insert into redemption_secrets (redemption_id, attempt, key_id, data) values (?, ?, ?, ?)', [
    ref.redemptionId,
    ref.attempt,
    keyId,
    data,
  ]);
}

export async function secretsRow(
  em: EntityManager,
  ref: AttemptRef,
): Promise<{ key_id: string; data: Buffer } | undefined> {
  const [row] = await em.execute<{ key_id: string; data: Buffer }[]>(
    'select key_id, data from redemption_secrets where redemption_id = ? and attempt = ?',
    [ref.redemptionId, ref.attempt],
  );
  return row;
}

export async function deleteSecrets(em: EntityManager, ref: AttemptRef): Promise<void> {
  await em.execute('delete from redemption_secrets where redemption_id = ? and attempt = ?', [
    ref.redemptionId,
    ref.attempt,
  ]);
}

export async function productIdOfRedemption(em: EntityManager, redemptionId: string): Promise<string> {
  const [row] = await em.execute<{ product_id: string }[]>(
    'select ic.product_id from redemptions r join issued_codes ic on ic.id = r.code_id where r.id = ?',
    [redemptionId],
  );
  return row.product_id;
}

/** Keeps the upstream's (already masked) completion note on the attempt. */
export async function setUpstreamDeliverable(em: EntityManager, ref: AttemptRef, note: string | null): Promise<void> {
  await em.execute('update redemption_attempts set upstream_deliverable = ? where redemption_id = ? and attempt = ?', [
    note,
    ref.redemptionId,
    ref.attempt,
  ]);
}

/** The first upstream reference of an attempt; from then on it holds supplier resources. */
export async function setUpstreamRef(em: EntityManager, ref: AttemptRef, upstreamRef: string): Promise<void> {
  await em.execute(
    'update redemption_attempts set upstream_ref = ?, holds_resources = true where redemption_id = ? and attempt = ? and upstream_ref is null',
    [upstreamRef, ref.redemptionId, ref.attempt],
  );
}

export async function finishAttemptRow(
  em: EntityManager,
  ref: AttemptRef,
  r: { status: string; failureCode: string | null; holdsResources: boolean },
): Promise<void> {
  await em.execute(
    `update redemption_attempts set status = ?, failure_code = ?, holds_resources = ?, finished_at = now()
        where redemption_id = ? and attempt = ?`,
    [r.status, r.failureCode, r.holdsResources, ref.redemptionId, ref.attempt],
  );
}

/**
 * The redemption's outcome, if `ref` is still its current attempt: returns its `fulfilled_at`
 * (null when failed), or undefined when another attempt is current.
 */
export async function finishRedemptionRow(
  em: EntityManager,
  ref: AttemptRef,
  r: { status: string; failureCode: string | null; deliverable: string | null; fulfilledAt: Date | null },
): Promise<{ fulfilled_at: Date | null } | undefined> {
  const [updated] = await em.execute<{ fulfilled_at: Date | null }[]>(
    `update redemptions set status = ?, failure_code = ?, deliverable = ?, fulfilled_at = ?, updated_at = now()
        where id = ? and attempt = ? returning fulfilled_at`,
    [r.status, r.failureCode, r.deliverable, r.fulfilledAt, ref.redemptionId, ref.attempt],
  );
  return updated;
}

/** What a redemption event says about the code and its order. */
export async function redemptionEventFacts(em: EntityManager, redemptionId: string) {
  const [row] = await em.execute<
    {
      account_id: string;
      code: string;
      order_id: string;
      product_id: string;
      external_order_id: string | null;
      channel: string;
    }[]
  >(
    `select r.account_id, ic.code, ic.order_id, ic.product_id, o.external_order_id, o.channel
       from redemptions r join issued_codes ic on ic.id = r.code_id join orders o on o.id = ic.order_id where r.id = ?`,
    [redemptionId],
  );
  return row;
}

/** A failed attempt the upstream let go of holds nothing any more. */
export async function releaseAttempt(em: EntityManager, ref: AttemptRef): Promise<void> {
  await em.execute(
    `update redemption_attempts set holds_resources = false where redemption_id = ? and attempt = ? and status = 'failed'`,
    [ref.redemptionId, ref.attempt],
  );
}
