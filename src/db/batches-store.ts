import type { EntityManager } from '@mikro-orm/postgresql';

// Order batches: a batch and its lines as they were posted, each line's outcome once its batch
// workflow placed it (the order, or the order API's refusal), and the reads of progress.

/** A batch as `select *` reads it (times as Postgres writes them). */
export interface BatchRow {
  id: string;
  account_id: string;
  external_batch_id: string;
  lines_hash: string;
  total: number;
  status: 'running' | 'completed';
  created_at: string;
  completed_at: string | null;
}

export interface BatchLineInput {
  externalOrderId: string;
  productId: string;
  qty: number;
  expectedUnitPrice?: string;
}

/**
 * Inserts a batch with its lines in one statement, or finds the account's batch under this
 * externalBatchId; `created` tells which.
 */
export async function insertBatch(
  em: EntityManager,
  b: { id: string; accountId: string; externalBatchId: string; linesHash: string; lines: BatchLineInput[] },
): Promise<{ row: BatchRow; created: boolean }> {
  const lines = b.lines.map((l, i) => ({
    l: i,
    e: l.externalOrderId,
    p: l.productId,
    q: l.qty,
    u: l.expectedUnitPrice ?? null,
  }));
  const inserted = await em.execute<BatchRow[]>(
    `with batch as (
       insert into batches (id, account_id, external_batch_id, lines_hash, total) values (?, ?, ?, ?, ?)
       on conflict (account_id, external_batch_id) do nothing returning *),
     lines as (
       insert into batch_lines (batch_id, line, external_order_id, product_id, qty, expected_unit_price)
       select batch.id, x.l, x.e, x.p, x.q, x.u from batch, jsonb_to_recordset(?::jsonb) as x(l int, e text, p text, q int, u text))
     select * from batch`,
    [b.id, b.accountId, b.externalBatchId, b.linesHash, b.lines.length, JSON.stringify(lines)],
  );
  if (inserted[0]) return { row: inserted[0], created: true };
  const [existing] = await em.execute<BatchRow[]>(
    'select * from batches where account_id = ? and external_batch_id = ?',
    [b.accountId, b.externalBatchId],
  );
  return { row: existing, created: false };
}

export async function findBatch(
  em: EntityManager,
  where: { id: string; accountId?: string },
): Promise<BatchRow | undefined> {
  const [row] = await em.execute<BatchRow[]>(
    `select * from batches where id = ?${where.accountId ? ' and account_id = ?' : ''}`,
    where.accountId ? [where.id, where.accountId] : [where.id],
  );
  return row;
}

export interface LineCounts {
  pending: number;
  placed: number;
  rejected: number;
}

export async function lineCounts(em: EntityManager, batchId: string): Promise<LineCounts> {
  const [row] = await em.execute<LineCounts[]>(
    `select count(*) filter (where status = 'pending')::int as pending, count(*) filter (where status = 'placed')::int as placed,
            count(*) filter (where status = 'rejected')::int as rejected
       from batch_lines where batch_id = ?`,
    [batchId],
  );
  return row;
}

/** An account's batches, newest first, with their lines' counts. */
export function recentBatches(em: EntityManager, accountId: string, limit: number): Promise<(BatchRow & LineCounts)[]> {
  return em.execute<(BatchRow & LineCounts)[]>(
    `select b.*, c.pending, c.placed, c.rejected from batches b
       cross join lateral (select count(*) filter (where status = 'pending')::int as pending, count(*) filter (where status = 'placed')::int as placed,
                                  count(*) filter (where status = 'rejected')::int as rejected from batch_lines where batch_id = b.id) c
      where b.account_id = ? order by b.created_at desc, b.id desc limit ?`,
    [accountId, limit],
  );
}

export interface PendingLine {
  line: number;
  external_order_id: string;
  product_id: string;
  qty: number;
  expected_unit_price: string | null;
}

/** The lines in [from, to) still without an outcome, in line order. */
export function pendingLines(em: EntityManager, batchId: string, from: number, to: number): Promise<PendingLine[]> {
  return em.execute<PendingLine[]>(
    `select line, external_order_id, product_id, qty, expected_unit_price from batch_lines
      where batch_id = ? and line >= ? and line < ? and status = 'pending' order by line`,
    [batchId, from, to],
  );
}

export type LineOutcome =
  | { status: 'placed'; orderId: string; reused: boolean }
  | { status: 'rejected'; code: string; message: string; details?: Record<string, unknown> };

/** A line's outcome, recorded once (a line already decided keeps its first outcome). */
export async function recordLineOutcome(
  em: EntityManager,
  batchId: string,
  line: number,
  o: LineOutcome,
): Promise<void> {
  await em.execute(
    `update batch_lines set status = ?, order_id = ?, reused = ?, error_code = ?, error_message = ?, error_details = ?::jsonb, decided_at = now()
      where batch_id = ? and line = ? and status = 'pending'`,
    o.status === 'placed'
      ? ['placed', o.orderId, o.reused, null, null, null, batchId, line]
      : ['rejected', null, null, o.code, o.message, o.details ? JSON.stringify(o.details) : null, batchId, line],
  );
}

/** Lines in [from, to) that placed a direct-code order now paid and waiting for procurement. */
export function procurementsToHandOff(em: EntityManager, batchId: string, from: number, to: number) {
  return em.execute<{ order_id: string; account_id: string; external_order_id: string }[]>(
    `select o.id as order_id, o.account_id, o.external_order_id from batch_lines l join orders o on o.id = l.order_id
      where l.batch_id = ? and l.line >= ? and l.line < ? and l.status = 'placed' and not l.reused
        and o.delivery_type = 'direct_code' and o.status = 'paid' and o.fulfillment_status = 'processing'
      order by l.line`,
    [batchId, from, to],
  );
}

/** running → completed; undefined when it was completed already. */
export async function markBatchCompleted(em: EntityManager, batchId: string): Promise<BatchRow | undefined> {
  const [row] = await em.execute<BatchRow[]>(
    `update batches set status = 'completed', completed_at = now(), updated_at = now() where id = ? and status = 'running' returning *`,
    [batchId],
  );
  return row;
}

export interface LineRow extends PendingLine {
  status: 'pending' | 'placed' | 'rejected';
  order_id: string | null;
  reused: boolean | null;
  error_code: string | null;
  error_message: string | null;
  error_details: Record<string, unknown> | null;
  order_status: string | null;
  order_amount: string | null;
  delivery_type: string | null;
  fulfillment_status: string | null;
  fulfilled_quantity: number | null;
  codes: string[] | null;
}

/**
 * A page of lines after `afterLine`, in line order, each with its order's state and codes (voided
 * ones aside, oldest first: the caller shows them as the order does, only once delivered).
 */
export function linesPage(em: EntityManager, batchId: string, afterLine: number, limit: number): Promise<LineRow[]> {
  return em.execute<LineRow[]>(
    `select l.line, l.external_order_id, l.product_id, l.qty, l.expected_unit_price, l.status, l.order_id, l.reused,
            l.error_code, l.error_message, l.error_details,
            o.status as order_status, o.amount as order_amount, o.delivery_type, o.fulfillment_status, o.fulfilled_quantity,
            (select json_agg(c.code order by c.id) from issued_codes c where c.order_id = o.id and c.voided = false) as codes
       from batch_lines l left join orders o on o.id = l.order_id
      where l.batch_id = ? and l.line > ? order by l.line limit ?`,
    [batchId, afterLine, limit],
  );
}
