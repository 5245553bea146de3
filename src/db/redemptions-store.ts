import type { EntityManager } from '@mikro-orm/postgresql';
import type { Redemption } from './entities/all-entities';

type RedemptionStatus = Redemption['status'];

// Redemptions (one row per platform code) as the submission, the REST reads, the site and
// support see them, joined with the issued code and its order.

export interface CodeRow {
  id: string;
  code: string;
  account_id: string;
  order_id: string;
  product_id: string;
  kind: string;
  is_test: boolean;
  voided: boolean;
  order_status: string;
  channel: string;
  external_order_id: string | null;
}

export interface RedemptionRow {
  id: string;
  code_id: string;
  account_id: string;
  attempt: number;
  status: RedemptionStatus;
  failure_code: string | null;
  deliverable: string | null;
  created_at: Date;
  fulfilled_at: Date | null;
  holds_resources: boolean | null;
}

export interface ViewRow {
  id: string;
  account_id: string;
  status: RedemptionStatus;
  failure_code: string | null;
  deliverable: string | null;
  created_at: Date;
  fulfilled_at: Date | null;
  code: string;
  order_id: string;
  product_id: string;
  external_order_id: string | null;
}

const CODE_SQL = `select ic.id, ic.code, ic.account_id, ic.order_id, ic.product_id, ic.kind, ic.is_test, ic.voided,
    o.status as order_status, o.channel, o.external_order_id
  from issued_codes ic join orders o on o.id = ic.order_id where ic.code = ?`;

const REDEMPTION_SQL = `select r.id, r.code_id, r.account_id, r.attempt, r.status, r.failure_code, r.deliverable, r.created_at,
    r.fulfilled_at, a.holds_resources
  from redemptions r left join redemption_attempts a on a.redemption_id = r.id and a.attempt = r.attempt`;

const VIEW_SQL = `select r.id, r.account_id, r.status, r.failure_code, r.deliverable, r.created_at, r.fulfilled_at,
    ic.code, ic.order_id, ic.product_id, o.external_order_id
  from redemptions r join issued_codes ic on ic.id = r.code_id join orders o on o.id = ic.order_id`;

/** An issued code with its order; `lock` holds the code row for the rest of the caller's transaction. */
export async function codeRow(em: EntityManager, code: string, lock = false): Promise<CodeRow | undefined> {
  const [row] = await em.execute<CodeRow[]>(`${CODE_SQL}${lock ? ' for update of ic' : ''}`, [code]);
  return row;
}

/** The redemption of a code with whether its current attempt holds supplier resources. */
export async function redemptionOfCodeRow(em: EntityManager, codeId: string): Promise<RedemptionRow | undefined> {
  const [row] = await em.execute<RedemptionRow[]>(`${REDEMPTION_SQL} where r.code_id = ?`, [codeId]);
  return row;
}

export async function viewRowById(em: EntityManager, redemptionId: string): Promise<ViewRow | undefined> {
  const [row] = await em.execute<ViewRow[]>(`${VIEW_SQL} where r.id = ?`, [redemptionId]);
  return row;
}

export async function viewRowByCodeId(em: EntityManager, codeId: string): Promise<ViewRow | undefined> {
  const [row] = await em.execute<ViewRow[]>(`${VIEW_SQL} where r.code_id = ?`, [codeId]);
  return row;
}

/** A failed redemption's next attempt: pending again, its last outcome cleared. */
export async function reopenRedemption(
  em: EntityManager,
  redemptionId: string,
  attempt: number,
  source: string,
): Promise<void> {
  await em.execute(
    `update redemptions set attempt = ?, status = 'pending', failure_code = null, deliverable = null, fulfilled_at = null,
           source = ?, updated_at = now() where id = ? and status = 'failed'`,
    [attempt, source, redemptionId],
  );
}

/** A code's first redemption, at attempt 1. */
export async function insertRedemption(
  em: EntityManager,
  r: { id: string; codeId: string; accountId: string; orderId: string; source: string },
): Promise<void> {
  await em.execute(
    `insert into redemptions (id, code_id, account_id, order_id, source, attempt, status) values (?, ?, ?, ?, ?, 1, 'pending')`,
    [r.id, r.codeId, r.accountId, r.orderId, r.source],
  );
}

export async function redemptionState(em: EntityManager, redemptionId: string) {
  const [row] = await em.execute<{ attempt: number; status: string }[]>(
    'select attempt, status from redemptions where id = ?',
    [redemptionId],
  );
  return row;
}
