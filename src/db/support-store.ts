import type { EntityManager } from '@mikro-orm/postgresql';

// What support did (support_actions, one row per action on an order or redemption) and the codes
// it staged for a manual delivery (support_code_batches).

export async function insertSupportAction(
  em: EntityManager,
  a: { subjectId: string; action: string; actor: string; reason: string; payload: Record<string, unknown> },
): Promise<void> {
  await em.execute(
    'insert into support_actions (subject_id, action, actor, reason, payload) values (?, ?, ?, ?, ?::jsonb)',
    [a.subjectId, a.action, a.actor, a.reason, JSON.stringify(a.payload)],
  );
}

/** Every action on an order or redemption, oldest first. */
export async function supportActionsOf(em: EntityManager, subjectId: string) {
  return em.execute<
    { action: string; actor: string; reason: string; payload: Record<string, unknown>; created_at: Date }[]
  >('select action, actor, reason, payload, created_at from support_actions where subject_id = ? order by id', [
    subjectId,
  ]);
}

/** A driver error quotes the codes: callers wrap this in `withCodes`. */
export async function insertCodeBatch(
  em: EntityManager,
  batchId: string,
  orderId: string,
  codes: string[],
): Promise<void> {
  await em.execute('insert into support_code_batches (id, order_id, codes) values (?, ?, ?::jsonb)', [
    batchId,
    orderId,
    JSON.stringify(codes),
  ]);
}

export async function codeBatchOf(em: EntityManager, batchId: string, orderId: string): Promise<string[] | undefined> {
  const [batch] = await em.execute<{ codes: string[] }[]>(
    'select codes from support_code_batches where id = ? and order_id = ?',
    [batchId, orderId],
  );
  return batch?.codes;
}

export async function deleteCodeBatch(em: EntityManager, batchId: string): Promise<void> {
  await em.execute('delete from support_code_batches where id = ?', [batchId]);
}

export interface SupportRequestRow {
  id: string;
  subject_id: string;
  action: string;
  actor: string;
  reason: string;
  batch_id: string | null;
  applied_at: Date | null;
  closed_at: Date | null;
}

/** A support action asked for, on record before its workflow is told (support_requests). */
export async function insertSupportRequest(
  em: EntityManager,
  r: { id: string; subjectId: string; action: string; actor: string; reason: string; batchId?: string | null },
): Promise<void> {
  await em.execute(
    'insert into support_requests (id, subject_id, action, actor, reason, batch_id) values (?, ?, ?, ?, ?, ?)',
    [r.id, r.subjectId, r.action, r.actor, r.reason, r.batchId ?? null],
  );
}

/** The request row for this subject and action, locked for the rest of the caller's transaction. */
export async function lockSupportRequest(
  em: EntityManager,
  id: string,
  subjectId: string,
  action: string,
): Promise<SupportRequestRow | undefined> {
  const [row] = await em.execute<SupportRequestRow[]>(
    'select id, subject_id, action, actor, reason, batch_id, applied_at, closed_at from support_requests where id = ? and subject_id = ? and action = ? for update',
    [id, subjectId, action],
  );
  return row;
}

export async function markSupportRequestApplied(em: EntityManager, id: string): Promise<void> {
  await em.execute('update support_requests set applied_at = now() where id = ? and applied_at is null', [id]);
}

/** A request its workflow refused: it can no longer be carried out. */
export async function closeSupportRequest(em: EntityManager, id: string): Promise<void> {
  await em.execute('update support_requests set closed_at = now() where id = ? and applied_at is null', [id]);
}
