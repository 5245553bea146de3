import type { EntityManager } from '@mikro-orm/postgresql';

// The audit log (audit_log, audit_outcomes). Only inserts and reads live here: the tables'
// triggers refuse UPDATE, DELETE and TRUNCATE, and the service's role may be granted nothing else
// (./service-role), so there is nothing else to write.

export interface AuditInsert {
  actor: string;
  actorEmail: string | null;
  staffId: string | null;
  role: string;
  action: string;
  subjectId: string | null;
  accountId: string | null;
  reason: string | null;
  requestId: string | null;
  details: Record<string, unknown>;
}

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  actor_email: string | null;
  staff_id: string | null;
  role: string;
  action: string;
  subject_id: string | null;
  account_id: string | null;
  reason: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
  outcome: string | null;
  outcome_at: Date | null;
}

export async function insertAuditRow(em: EntityManager, a: AuditInsert): Promise<string> {
  const [row] = await em.execute<{ id: string }[]>(
    `insert into audit_log (actor, actor_email, staff_id, role, action, subject_id, account_id, reason, request_id, details)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb) returning id`,
    [
      a.actor,
      a.actorEmail,
      a.staffId,
      a.role,
      a.action,
      a.subjectId,
      a.accountId,
      a.reason,
      a.requestId,
      JSON.stringify(a.details),
    ],
  );
  return String(row.id);
}

/** The outcome of an audited action: once per row (the primary key refuses a second). */
export async function insertAuditOutcome(em: EntityManager, auditId: string, outcome: string): Promise<void> {
  await em.execute('insert into audit_outcomes (audit_id, outcome) values (?, ?) on conflict (audit_id) do nothing', [
    auditId,
    outcome,
  ]);
}

export interface AuditFilter {
  /** A staff name or email, or `token`. */
  actor?: string;
  /** An action name, or its prefix ending in `.` (`order.`). */
  action?: string;
  /** Any id the row is about: the subject or the reseller account. */
  id?: string;
  /** Rows older than this id (keyset paging, newest first). */
  beforeId?: string;
  limit: number;
}

export async function auditPage(em: EntityManager, f: AuditFilter): Promise<AuditRow[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (f.actor) {
    where.push('(a.actor = ? or a.actor_email = ?)');
    params.push(f.actor, f.actor.toLowerCase());
  }
  if (f.action) {
    if (f.action.endsWith('.')) {
      where.push('left(a.action, length(?::text)) = ?');
      params.push(f.action, f.action);
    } else {
      where.push('a.action = ?');
      params.push(f.action);
    }
  }
  if (f.id) {
    where.push('(a.subject_id = ? or a.account_id = ?)');
    params.push(f.id, f.id);
  }
  if (f.beforeId) {
    where.push('a.id < ?');
    params.push(f.beforeId);
  }
  params.push(f.limit);
  return em.execute<AuditRow[]>(
    `select a.id, a.at, a.actor, a.actor_email, a.staff_id, a.role, a.action, a.subject_id, a.account_id, a.reason, a.request_id,
            a.details, o.outcome, o.at as outcome_at
       from audit_log a left join audit_outcomes o on o.audit_id = a.id
      ${where.length ? `where ${where.join(' and ')}` : ''}
      order by a.id desc limit ?`,
    params,
  );
}

/** The reseller account of an order, to file an order action under it too. */
export async function accountOfOrder(em: EntityManager, orderId: string): Promise<string | null> {
  const [row] = await em.execute<{ account_id: string }[]>('select account_id from orders where id = ?', [orderId]);
  return row?.account_id ?? null;
}
