import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm';
import {
  claimRepair,
  ledgerChecks,
  saveLedgerCheckpoints,
  type LedgerCheckRow,
  releaseRepair,
  repairHistory,
  repairsOf,
  resolveLedgerAlerts,
  type RepairRecord,
} from '../db/reconcile-store';
import { fromDb } from '../domain/money';
import { reconcilerRepairs } from '../metrics/registry';
import type { TemporalHandle } from '../temporal/client';
import {
  RECONCILE_CHECKS,
  emptyTotals,
  type ReconcileStep,
  type ReconcileStepResult,
  type ReconcileTotals,
  type RepairKind,
} from '../contracts/reconcile-contract';
import { lifecycles, type Lifecycle, type Plan, type ReconcileConfig } from './reconcile-lifecycles';

// The reconciler: Postgres owns the facts, Temporal the time, and here the two are compared. For
// each lifecycle, the rows that are not final yet are paged through (keyset, by id) and the
// workflow each should have is described by its deterministic id; one that closed without
// settling its row, or never started, is started again the way its lifecycle starts it, and the
// repair recorded, counted and logged. Money is never repaired: a ledger that does not add up is
// alerted, once per discrepancy, and left as it is for a person to look at.

/** Lines for operators, in the Temporal logger's shape (the activity's `log` fits, so does a test's). */
export interface ReconcileLog {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

export interface ReconcileDeps {
  orm: Orm;
  temporal: TemporalHandle;
  config: ReconcileConfig;
  log: ReconcileLog;
}

export type FindingAction =
  'started' | 'restarted' | 'gave_up' | 'alerted' | 'failed' | 'would_start' | 'would_restart' | 'would_alert';

/** One thing a step found wrong, and what it did about it (or, in a dry run, would do). */
export interface Finding {
  kind: RepairKind | 'ledger';
  subjectId: string;
  action: FindingAction;
  workflowId?: string;
  /** What Temporal showed for it: the closed run's status, or `missing`. */
  workflow?: string;
  detail?: Record<string, unknown>;
}

export interface StepReport extends ReconcileStepResult {
  findings: Finding[];
}

/** A subject whose workflow keeps being lost is started again this many times, then left to a person. */
export const REPAIR_LIMIT = 3;

/** Describes at most this many workflows at once. */
const DESCRIBE_CONCURRENCY = 8;

/** Runs that closed with these statuses did not lose anything (their workflow is not restarted). */
const ALIVE = new Set(['RUNNING', 'CONTINUED_AS_NEW', 'PAUSED']);

/**
 * One step of one check: a page of rows after `step.after`, each compared with Temporal and, unless
 * `dryRun`, repaired. Safe to run beside another reconciler: each repair is claimed in Postgres
 * first (one per subject and observed run), so an orphan seen twice is started once.
 */
export async function reconcileStep(
  deps: ReconcileDeps,
  step: ReconcileStep,
  opts: { dryRun?: boolean } = {},
): Promise<StepReport> {
  if (step.check === 'ledger') return checkLedgers(deps, step.after, opts.dryRun ?? false);
  const l = lifecycles(deps)[step.check] as Lifecycle<unknown>;
  const limit = deps.config.RECONCILE_PAGE_SIZE;
  const rows = await l.rows(deps.orm.em.fork(), step.after, limit, deps.config.RECONCILE_GRACE_SECONDS);
  const findings = (
    await eachLimited(rows, DESCRIBE_CONCURRENCY, (row) => compare(deps, l.plan(row), opts.dryRun ?? false))
  ).filter((f) => f !== undefined);
  return {
    ...count(findings),
    checked: rows.length,
    next: rows.length === limit ? l.cursor(rows[rows.length - 1]) : null,
    findings,
  };
}

/** A whole reconciliation in this process (the CLI's, and tests'): every check, page by page. */
export async function reconcileNow(
  deps: ReconcileDeps,
  opts: { dryRun?: boolean } = {},
): Promise<{ totals: ReconcileTotals; findings: Finding[] }> {
  const totals = emptyTotals();
  const findings: Finding[] = [];
  for (const check of RECONCILE_CHECKS) {
    let after: string | null = null;
    do {
      const step = await reconcileStep(deps, { check, after }, opts);
      totals.checked += step.checked;
      totals.repaired += step.repaired;
      totals.alerted += step.alerted;
      totals.failed += step.failed;
      findings.push(...step.findings);
      after = step.next;
    } while (after !== null);
  }
  return { totals, findings };
}

/** `npx wholesale reconcile --history`: what the reconciler did, newest first. */
export async function reconcileHistory(em: EntityManager, limit: number) {
  return (await repairHistory(em, limit)).map((r) => ({
    at: r.created_at,
    kind: r.kind,
    subjectId: r.subject_id,
    action: r.action,
    workflowId: r.workflow_id,
    detail: r.detail,
    ...(r.kind === 'ledger' ? { resolvedAt: r.resolved_at } : {}),
  }));
}

function count(findings: Finding[]): Omit<ReconcileStepResult, 'checked' | 'next'> {
  const n = (...actions: FindingAction[]) => findings.filter((f) => actions.includes(f.action)).length;
  return { repaired: n('started', 'restarted'), alerted: n('alerted', 'gave_up'), failed: n('failed') };
}

async function describe(
  temporal: TemporalHandle,
  workflowId: string,
): Promise<{ status: string; runId: string | null }> {
  try {
    const d = await temporal.client.workflow.getHandle(workflowId).describe();
    return { status: d.status.name, runId: d.runId };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { status: 'missing', runId: null };
    throw err;
  }
}

/** One row: its workflow described, and started again if Temporal lost it. */
async function compare(deps: ReconcileDeps, plan: Plan, dryRun: boolean): Promise<Finding | undefined> {
  const seen = await describe(deps.temporal, plan.workflowId);
  if (ALIVE.has(seen.status) || plan.settledBy?.includes(seen.status)) return undefined;
  const found = {
    kind: plan.kind,
    subjectId: plan.subjectId,
    workflowId: plan.workflowId,
    workflow: seen.status,
    ...(plan.detail ? { detail: plan.detail } : {}),
  };
  const action = seen.runId ? 'restarted' : 'started';
  if (dryRun) return { ...found, action: seen.runId ? 'would_restart' : 'would_start' };

  const em = deps.orm.em.fork();
  // What this repair answers: the closed run it replaces, or the absence of any.
  const record: RepairRecord = {
    kind: plan.kind,
    subjectId: plan.subjectId,
    observed: seen.runId ?? 'missing',
    action,
    workflowId: plan.workflowId,
    detail: { previous: seen.status, ...plan.detail },
  };
  if ((await repairsOf(em, plan.kind, plan.subjectId)) >= REPAIR_LIMIT) {
    if (!(await claimRepair(em, { ...record, action: 'gave_up' }))) return undefined;
    deps.log.error('reconciler gives up on a workflow that keeps being lost; look at it by hand', {
      kind: plan.kind,
      subjectId: plan.subjectId,
      lostWorkflowId: plan.workflowId,
      repairs: REPAIR_LIMIT,
    });
    return { ...found, action: 'gave_up' };
  }
  if (!(await claimRepair(em, record))) return undefined;
  try {
    await plan.restart();
  } catch (err) {
    await releaseRepair(em, record);
    // Started meanwhile by its own path (or completed, and not to be replaced): nothing was lost.
    if (err instanceof WorkflowExecutionAlreadyStartedError) return undefined;
    deps.log.warn('reconciler could not restart a workflow; the next run tries again', {
      kind: plan.kind,
      subjectId: plan.subjectId,
      lostWorkflowId: plan.workflowId,
      error: err instanceof Error ? err.message : String(err),
    });
    return { ...found, action: 'failed' };
  }
  reconcilerRepairs.inc({ kind: plan.kind });
  deps.log.warn('reconciler restarted a workflow Temporal had lost', {
    kind: plan.kind,
    subjectId: plan.subjectId,
    lostWorkflowId: plan.workflowId,
    previous: seen.status,
  });
  return { ...found, action };
}

// The first account id of the keyset (uuids sort as their bytes).
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * A page of accounts: the balance against the sum of the ledger and its balanceAfter chain, read
 * from each account's checkpoint on (in full every RECONCILE_LEDGER_FULL_HOURS). One that does not
 * add up is recorded and logged once, and nothing is changed: the account keeps working and a
 * person decides. One that adds up moves its checkpoint, and one that adds up again resolves its alert.
 */
async function checkLedgers(deps: ReconcileDeps, after: string | null, dryRun: boolean): Promise<StepReport> {
  const em = deps.orm.em.fork();
  const limit = deps.config.RECONCILE_PAGE_SIZE;
  const rows = await ledgerChecks(em, after ?? NIL_UUID, limit, deps.config.RECONCILE_LEDGER_FULL_HOURS * 3600);
  const findings: Finding[] = [];
  const addingUp: LedgerCheckRow[] = [];
  for (const r of rows) {
    const differenceCents = fromDb(r.balance) - fromDb(r.ledger_sum);
    if (differenceCents === 0 && r.first_break === null) {
      addingUp.push(r);
      continue;
    }
    const detail = { balance: r.balance, ledgerSum: r.ledger_sum, differenceCents, firstBrokenLedgerId: r.first_break };
    if (dryRun) {
      findings.push({ kind: 'ledger', subjectId: r.id, action: 'would_alert', detail });
      continue;
    }
    // One open alert per account (a partial unique index): orders that keep working on the
    // account move its numbers, and the chain breaks again at its next row, but it is one problem.
    const observed = `first-seen:${new Date().toISOString()}`;
    if (
      !(await claimRepair(em, {
        kind: 'ledger',
        subjectId: r.id,
        observed,
        action: 'alerted',
        workflowId: null,
        detail,
      }))
    )
      continue;
    deps.log.error('ledger does not add up; nothing was changed, look at this account by hand', {
      accountId: r.id,
      ...detail,
    });
    findings.push({ kind: 'ledger', subjectId: r.id, action: 'alerted', detail });
  }
  if (!dryRun) {
    await saveLedgerCheckpoints(
      em,
      addingUp.filter((r) => r.advanced),
    );
    // An account with an open alert is checked in full, so only a full check can resolve one.
    const full = addingUp.filter((r) => r.full).map((r) => r.id);
    for (const accountId of await resolveLedgerAlerts(em, full)) deps.log.info('ledger adds up again', { accountId });
  }
  return {
    ...count(findings),
    checked: rows.length,
    next: rows.length === limit ? rows[rows.length - 1].id : null,
    findings,
  };
}

/** `fn` over `items`, at most `limit` at a time, results in order. */
async function eachLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
