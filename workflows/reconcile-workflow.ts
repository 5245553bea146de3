import { continueAsNew, isCancellation, log, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ReconcileActivities } from '../activities/reconcile-activities';
import {
  CHECKS_BEFORE_JOBS,
  DEFAULT_STEPS_PER_RUN,
  RECONCILE_CHECKS,
  jobChecksPatch,
  emptyTotals,
  type ReconcileCheck,
  type ReconcileTotals,
  type ReconcileWorkflowInput,
} from '../src/contracts/reconcile-contract';
import { fewTries } from './activity-options';

// A step reads one page from Postgres and asks Temporal about each row: retried a few times (an
// outage of either), then the check is left for the next run, which starts it over. It heartbeats:
// a step lost with its worker is retried within seconds, not after the whole start-to-close, since
// while it hangs the schedule (overlap: skip) starts no other run.
const { reconcileStep } = proxyActivities<ReconcileActivities>(
  fewTries('2 minutes', {
    heartbeatTimeout: '10 seconds',
    retry: { maximumInterval: '15 seconds', maximumAttempts: 5 },
  }),
);
const { reportReconcile } = proxyActivities<ReconcileActivities>(fewTries('30 seconds'));

/**
 * One reconciliation, started by the reconciler's schedule (overlap: skip) every
 * RECONCILE_SECONDS: each check pages through its non-final rows with a keyset cursor, one page
 * per activity, and restarts the workflows Temporal lost. A run is bounded: after `stepsPerRun`
 * steps (or when Temporal suggests it) it continues as new where it stands, so a large backlog
 * never grows one history without end. It reports once, at the end.
 */
export async function reconcileWorkflow(input: ReconcileWorkflowInput = {}): Promise<ReconcileTotals> {
  const totals = input.resume?.totals ?? emptyTotals();
  const stepsPerRun = input.stepsPerRun ?? DEFAULT_STEPS_PER_RUN;
  let steps = 0;
  const checks = patched(jobChecksPatch) ? RECONCILE_CHECKS : CHECKS_BEFORE_JOBS;
  const first = input.resume ? checks.indexOf(input.resume.check) : 0;
  for (const check of checks.slice(first)) {
    let after = input.resume?.check === check ? input.resume.after : null;
    do {
      if (steps >= stepsPerRun || workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof reconcileWorkflow>({
          resume: { check, after, totals },
          stepsPerRun: input.stepsPerRun,
        });
      }
      steps++;
      const step = await stepOrGiveUp(check, after);
      if (!step) {
        totals.incomplete.push(check);
        break;
      }
      totals.checked += step.checked;
      totals.repaired += step.repaired;
      totals.alerted += step.alerted;
      totals.failed += step.failed;
      after = step.next;
    } while (after !== null);
  }
  await reportReconcile(totals);
  return totals;
}

async function stepOrGiveUp(check: ReconcileCheck, after: string | null) {
  try {
    return await reconcileStep({ check, after });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('reconcile check left for the next run', {
      check,
      error: err instanceof Error ? err.message : String(err),
    });
    return undefined;
  }
}
