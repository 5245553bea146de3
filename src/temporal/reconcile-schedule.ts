import { ScheduleAlreadyRunning, type ScheduleOptionsStartWorkflowAction } from '@temporalio/client';
import type { Logger } from 'pino';
import type { TemporalHandle } from './client';
import { keepTrying } from './keep-trying';
import { reconcileScheduleId, reconcileWorkflowId } from '../contracts/reconcile-contract';
import type { Workflows } from '../contracts/workflow-types';

// The reconciler's Temporal Schedule: one per deployment (namespace and task queue), created by
// whichever worker process starts first and kept as it is by the others. Temporal, not a timer in
// some process, decides when a reconciliation runs, and its overlap policy (skip) keeps a slow run
// from being joined by the next.

type ReconcileAction = ScheduleOptionsStartWorkflowAction<Workflows['reconcileWorkflow']>;

function scheduleOf(taskQueue: string, everySeconds: number) {
  const action: ReconcileAction = {
    type: 'startWorkflow',
    workflowType: 'reconcileWorkflow',
    workflowId: reconcileWorkflowId(taskQueue),
    taskQueue,
    // Its bounds (grace period, page size) are the workers' settings, read by its activities.
    args: [{}],
  };
  return {
    spec: { intervals: [{ every: everySeconds * 1000 }] },
    action,
    // A run missed while Temporal was down is made up once, not once per missed period.
    policies: { overlap: 'SKIP' as const, catchupWindow: '1 minute' },
  };
}

/**
 * Creates the schedule, or brings its interval, action and policies to this config when it
 * exists (a changed RECONCILE_SECONDS takes effect at the next worker start). A pause an operator
 * set is kept.
 */
export async function ensureReconcileSchedule(
  temporal: TemporalHandle,
  everySeconds: number,
): Promise<'created' | 'updated' | 'unchanged'> {
  const scheduleId = reconcileScheduleId(temporal.taskQueue);
  const wanted = scheduleOf(temporal.taskQueue, everySeconds);
  try {
    await temporal.client.schedule.create({ scheduleId, ...wanted });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = temporal.client.schedule.getHandle(scheduleId);
  const current = await handle.describe();
  const same =
    current.spec.intervals?.length === 1 &&
    current.spec.intervals[0].every === everySeconds * 1000 &&
    current.policies.overlap === 'SKIP' &&
    current.action.type === 'startWorkflow' &&
    current.action.workflowType === 'reconcileWorkflow' &&
    current.action.taskQueue === temporal.taskQueue;
  if (same) return 'unchanged';
  await handle.update((previous) => ({
    ...wanted,
    state: { paused: previous.state.paused, note: previous.state.note },
  }));
  return 'updated';
}

/**
 * The worker process's part: the schedule made sure of at start; if Temporal refuses now, tried
 * again every `retryMs` in the background instead of failing the start. Returns what stops it.
 */
export async function keepReconcileSchedule(opts: {
  temporal: TemporalHandle;
  everySeconds: number;
  logger: Logger;
  retryMs?: number;
}): Promise<() => void> {
  const scheduleId = reconcileScheduleId(opts.temporal.taskQueue);
  return keepTrying({
    attempt: async () => {
      const outcome = await ensureReconcileSchedule(opts.temporal, opts.everySeconds);
      opts.logger.info({ scheduleId, outcome, everySeconds: opts.everySeconds }, 'reconciler schedule in place');
    },
    failure: 'could not create the reconciler schedule; trying again',
    context: { scheduleId },
    logger: opts.logger,
    retryMs: opts.retryMs,
  });
}
