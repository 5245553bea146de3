import { Context, log } from '@temporalio/activity';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import { reconcilerRuns } from '../src/metrics/registry';
import { reconcileStep } from '../src/services/reconcile';
import type { TemporalHandle } from '../src/temporal/client';
import type { ReconcileStep, ReconcileStepResult, ReconcileTotals } from '../src/contracts/reconcile-contract';

/**
 * The reconciliation workflow's steps. Results are ids and counts: what was found and done is in
 * Postgres (reconciler_repairs) and in the log, with the ids an operator looks for. The grace
 * period and page size are this worker's settings, read at each step, like every bound a
 * workflow started by a schedule cannot be given.
 */
export function createReconcileActivities(deps: { orm: Orm; config: Config; temporal?: TemporalHandle }) {
  const temporal = () => {
    if (!deps.temporal) throw new Error('this worker was given no Temporal client for the reconciler');
    return deps.temporal;
  };
  return {
    /**
     * One page of one check, compared with Temporal and repaired; returns the next cursor. It
     * heartbeats while it works, so a worker that dies mid-step is noticed within the heartbeat timeout.
     */
    async reconcileStep(step: ReconcileStep): Promise<ReconcileStepResult> {
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), 1000);
      try {
        const { findings: _findings, ...result } = await reconcileStep(
          { orm: deps.orm, temporal: temporal(), config: deps.config, log },
          step,
        );
        return result;
      } finally {
        clearInterval(beat);
      }
    },

    /** The run's one summary line, and its count. */
    async reportReconcile(totals: ReconcileTotals): Promise<void> {
      reconcilerRuns.inc({ outcome: totals.incomplete.length > 0 ? 'incomplete' : 'complete' });
      if (totals.incomplete.length > 0 || totals.failed > 0)
        log.warn('reconciliation finished, not all of it', { ...totals });
      else log.info('reconciliation finished', { ...totals });
    },
  };
}

export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;
