import type { EntityManager } from '@mikro-orm/postgresql';
import { ZodError } from 'zod';
import {
  accountOfOrder,
  auditPage,
  insertAuditOutcome,
  insertAuditRow,
  type AuditFilter,
  type AuditRow,
} from '../../db/audit-store';
import type { StaffRole } from '../../db/staff-store';
import { ApiError } from '../../domain/errors';

// Who did what, for every console, admin-API and changing CLI action: one append-only row, written
// before the action runs (so no action happens without its row), and its outcome appended once
// known. Triggers refuse UPDATE, DELETE and TRUNCATE (Migration20261209000000StaffConsole), and a
// service role that does not own the tables has only INSERT and SELECT on them (../db/service-role),
// so a row is final. Rows name ids, reasons and request ids; never codes, redeem details or secrets.

export type Actor =
  | { kind: 'staff'; staffId: string; name: string; email: string; role: StaffRole }
  /** A caller holding ADMIN_TOKEN: automation, not a person the service knows. */
  | { kind: 'token' }
  /** `npx wholesale` on a machine with the database URL, by the operator its --by names. */
  | { kind: 'cli'; user: string };

export const TOKEN_ACTOR: Actor = { kind: 'token' };

/**
 * The `actor` a service records in support_actions and operator claims. For staff it is the
 * email: unique and stable, so a claim is renewed by its holder and nobody else.
 */
export function actorLabel(actor: Actor): string {
  switch (actor.kind) {
    case 'staff':
      return actor.email;
    case 'token':
      return 'token';
    case 'cli':
      return `cli:${actor.user}`;
  }
}

export interface AuditEntry {
  action: string;
  /** The id the action is about: an order, a redemption, a key, a delivery, a staff member. */
  subjectId?: string | null;
  /** The reseller account it touches, when there is one. */
  accountId?: string | null;
  reason?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditContext {
  actor: Actor;
  requestId: string | null;
}

async function insertRow(em: EntityManager, ctx: AuditContext, entry: AuditEntry): Promise<string> {
  const a = ctx.actor;
  return insertAuditRow(em, {
    actor: a.kind === 'staff' ? a.name : actorLabel(a),
    actorEmail: a.kind === 'staff' ? a.email : null,
    staffId: a.kind === 'staff' ? a.staffId : null,
    role: a.kind === 'staff' ? a.role : a.kind,
    action: entry.action,
    subjectId: entry.subjectId ?? null,
    accountId: entry.accountId ?? null,
    reason: entry.reason ?? null,
    requestId: ctx.requestId,
    details: entry.details ?? {},
  });
}

/** The stable code an action ended with: `ok`, or the error's code. */
function outcomeOf(err: unknown): string {
  if (err instanceof ApiError) return err.code;
  if (err instanceof ZodError) return 'invalid_input';
  return 'error';
}

/**
 * Records the action, runs it, and appends its outcome. If the row cannot be written the action
 * does not run. A failed action keeps its own error: when even the outcome cannot be written (the
 * database is gone), the row stays without one and the original error is what the caller sees.
 */
export async function audited<T>(
  em: EntityManager,
  ctx: AuditContext,
  entry: AuditEntry,
  run: () => Promise<T>,
): Promise<T> {
  const log = em.fork();
  const id = await insertRow(log, ctx, entry);
  let result: T;
  try {
    result = await run();
  } catch (err) {
    await insertAuditOutcome(log, id, outcomeOf(err)).catch(() => undefined);
    throw err;
  }
  await insertAuditOutcome(log, id, 'ok');
  return result;
}

/**
 * An admin-API action, recorded as "token": ADMIN_TOKEN names no person, so the `actor` the caller
 * typed is kept in the details, not as the actor. An order action is filed under its account too.
 */
export async function auditedByToken<T>(
  em: EntityManager,
  requestId: string | null,
  entry: AuditEntry & { orderId?: string; typedActor?: string },
  run: () => Promise<T>,
): Promise<T> {
  const { orderId, typedActor, ...rest } = entry;
  const accountId = rest.accountId ?? (orderId ? await accountOfOrder(em.fork(), orderId) : null);
  const details = typedActor === undefined ? rest.details : { ...rest.details, typedActor };
  return audited(
    em,
    { actor: TOKEN_ACTOR, requestId },
    { ...rest, subjectId: rest.subjectId ?? orderId, accountId, details },
    run,
  );
}

/** An event with nothing further to run (a sign-in, a sign-out): its row and outcome at once. */
export async function recordAudit(
  em: EntityManager,
  ctx: AuditContext,
  entry: AuditEntry,
  outcome = 'ok',
): Promise<void> {
  const log = em.fork();
  await insertAuditOutcome(log, await insertRow(log, ctx, entry), outcome);
}

const unix = (d: Date | string | null) => (d === null ? null : Math.floor(new Date(d).getTime() / 1000));

export const auditView = (r: AuditRow) => ({
  id: String(r.id),
  at: unix(r.at)!,
  actor: r.actor,
  actorEmail: r.actor_email,
  role: r.role,
  action: r.action,
  subjectId: r.subject_id,
  accountId: r.account_id,
  reason: r.reason,
  requestId: r.request_id,
  details: r.details,
  outcome: r.outcome,
});
export type AuditView = ReturnType<typeof auditView>;

/** Newest first, `limit` rows; `nextBefore` continues the list. */
export async function listAudit(
  em: EntityManager,
  filter: AuditFilter,
): Promise<{ items: AuditView[]; nextBefore: string | null }> {
  const rows = await auditPage(em, { ...filter, limit: filter.limit + 1 });
  const items = rows.slice(0, filter.limit).map(auditView);
  return { items, nextBefore: rows.length > filter.limit ? items[items.length - 1].id : null };
}
