// The reconciler's shared, workflow-safe contract: its schedule and workflow ids, the checks it
// runs in order, and what a step and a run report. Imported by the workflow, its activities, the
// service (src/services/reconcile.ts), the schedule's creation and the CLI.

/**
 * One schedule per deployment, which is one task queue of a namespace: every worker process of it
 * creates the same schedule (the first one wins), and test harnesses on their own task queues of
 * one server do not share theirs.
 */
export const reconcileScheduleId = (taskQueue: string) => `reconciler:${taskQueue}`;

/** The scheduled runs' id (Temporal appends the time of each action). */
export const reconcileWorkflowId = (taskQueue: string) => `reconcile:${taskQueue}`;

/** Every lifecycle the reconciler compares, in the order a run walks them. */
export const RECONCILE_CHECKS = [
  'payments',
  'procurements',
  'redemptions',
  'deliveries',
  'evm_checkouts',
  'exports',
  'batches',
  'ledger',
] as const;
export type ReconcileCheck = (typeof RECONCILE_CHECKS)[number];

/**
 * The checks of runs recorded before exports and batches were reconciled: their histories replay
 * with these. A run records `jobChecksPatch` and walks them all.
 */
export const CHECKS_BEFORE_JOBS: readonly ReconcileCheck[] = [
  'payments',
  'procurements',
  'redemptions',
  'deliveries',
  'evm_checkouts',
  'ledger',
];
export const jobChecksPatch = 'reconcile-exports-batches';

/** What a repair is counted and recorded as (`wholesale_reconciler_repairs_total{kind}`). */
export type RepairKind =
  | 'order_payment'
  | 'topup_payment'
  | 'procurement'
  | 'redemption'
  | 'webhook_delivery'
  | 'evm_checkout'
  | 'export'
  | 'batch';

/** One step of a check: a page of rows after the keyset cursor `after` (null: from the start). */
export interface ReconcileStep {
  check: ReconcileCheck;
  after: string | null;
}

export interface ReconcileCounts {
  /** Rows compared with Temporal (accounts, for the ledger). */
  checked: number;
  /** Workflows started again. */
  repaired: number;
  /** Ledgers that do not add up, and orphans given up on after repeated repairs, newly alerted. */
  alerted: number;
  /** Repairs that failed (Temporal refused or was unreachable): the next run tries again. */
  failed: number;
}

export interface ReconcileStepResult extends ReconcileCounts {
  /** The cursor of the next page, or null when the check is done. */
  next: string | null;
}

export interface ReconcileTotals extends ReconcileCounts {
  /** Checks whose step still failed after its retries; the next run starts them over. */
  incomplete: ReconcileCheck[];
}

export interface ReconcileWorkflowInput {
  /** Where a continued-as-new run picks up, and what the run had counted so far. */
  resume?: ReconcileStep & { totals: ReconcileTotals };
  /** Steps per run before it continues as new (bounded history); the default is DEFAULT_STEPS_PER_RUN. */
  stepsPerRun?: number;
}

export const DEFAULT_STEPS_PER_RUN = 50;

export const emptyTotals = (): ReconcileTotals => ({ checked: 0, repaired: 0, alerted: 0, failed: 0, incomplete: [] });
