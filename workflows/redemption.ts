import { condition, continueAsNew, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { RedemptionActivities } from '../activities/redemptions';
import {
  operatorDecisionSignal,
  redemptionStateQuery,
  type AttemptOutcome,
  type OperatorDecision,
  type RedemptionWorkflowInput,
  type RedemptionWorkflowState,
  type UpstreamState,
} from '../src/temporal/redemptions';

/**
 * One redemption attempt, keyed by `redemption:<redemptionId>:<attempt>` (spec 3.4):
 * pending → processing (submitted upstream) → the upstream status refreshed at most once per
 * `refreshSeconds` → fulfilled or failed. Manual products wait for an operator decision instead
 * of polling. A failed attempt that still holds supplier resources keeps watching the upstream
 * until they are released, so a resubmission is `retry_conflict` until then.
 */
export async function redemptionWorkflow(input: RedemptionWorkflowInput): Promise<RedemptionWorkflowState> {
  const refreshMs = input.refreshSeconds * 1000;
  const ids = { redemptionId: input.redemptionId, attempt: input.attempt };
  const state: RedemptionWorkflowState = {
    ...ids,
    phase: input.resume?.phase ?? 'start',
    status: !input.resume ? 'pending' : input.resume.phase === 'releasing' ? 'failed' : 'processing',
    manual: input.resume?.manual ?? false,
    upstreamRef: input.resume?.upstreamRef ?? null,
    refreshes: 0,
    decision: input.resume?.decision ?? null,
  };
  setHandler(redemptionStateQuery, () => state);
  setHandler(operatorDecisionSignal, (decision) => {
    state.decision ??= decision;
  });

  // Postgres steps retry until the database is back; a lost attempt is given up after a few seconds.
  const db = proxyActivities<RedemptionActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
  const visibility = proxyActivities<RedemptionActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 12 },
  });
  // Upstream calls never retry faster than the refresh cadence.
  const supplier = proxyActivities<RedemptionActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: refreshMs, backoffCoefficient: 2, maximumInterval: refreshMs * 10, maximumAttempts: 10 },
  });

  const finish = async (outcome: AttemptOutcome) => {
    await db.finishRedemptionAttempt({ ...ids, outcome });
    state.status = outcome.status;
  };

  const continueIfLong = async () => {
    if (!workflowInfo().continueAsNewSuggested) return;
    await continueAsNew<typeof redemptionWorkflow>({
      ...input,
      resume: { phase: state.phase, upstreamRef: state.upstreamRef, manual: state.manual, decision: state.decision },
    });
  };

  const refresh = async (): Promise<UpstreamState | undefined> => {
    state.refreshes++;
    try {
      return await supplier.redemptionUpstreamStatus({ ...ids, upstreamRef: state.upstreamRef! });
    } catch {
      return undefined; // the upstream stayed down for a while; ask again at the next refresh
    }
  };

  const operatorOutcome = (d: OperatorDecision): AttemptOutcome =>
    d.decision === 'fulfill'
      ? { status: 'fulfilled', deliverable: d.reason ? `Fulfilled by an operator: ${d.reason}` : 'Fulfilled by an operator.' }
      : { status: 'failed', failureCode: 'rejected_by_operator', holdsResources: false };

  /** Until an operator decides (manual products) or the upstream reports a result. */
  const awaitOutcome = async (): Promise<AttemptOutcome> => {
    if (state.manual) {
      await condition(() => state.decision !== null);
      return operatorOutcome(state.decision!);
    }
    for (;;) {
      // The durable timer between refreshes; an operator may still decide a stuck redemption.
      if (await condition(() => state.decision !== null, refreshMs)) return operatorOutcome(state.decision!);
      const status = await refresh();
      if (status?.state === 'fulfilled') return { status: 'fulfilled' };
      if (status?.state === 'failed') return { status: 'failed', failureCode: status.failureCode, holdsResources: status.holdsResources };
      await continueIfLong();
    }
  };

  if (state.phase === 'start') {
    let begun: { state: 'ready' | 'finished'; manual: boolean };
    try {
      begun = await visibility.beginRedemptionAttempt(ids);
    } catch {
      state.phase = 'abandoned'; // its submission never committed
      return state;
    }
    if (begun.state === 'finished') {
      state.phase = 'done';
      return state;
    }
    state.manual = begun.manual;
    state.status = 'processing';
    try {
      state.upstreamRef = (await supplier.submitRedemptionUpstream(ids)).ref;
    } catch {
      await finish({ status: 'failed', failureCode: 'fulfillment_failed', holdsResources: false });
      state.phase = 'done';
      return state;
    }
    state.phase = 'waiting';
  }

  if (state.phase === 'waiting') {
    const outcome = await awaitOutcome();
    await finish(outcome);
    state.phase = outcome.status === 'failed' && outcome.holdsResources ? 'releasing' : 'done';
  }

  while (state.phase === 'releasing') {
    await sleep(refreshMs);
    const status = await refresh();
    if (status && (status.state !== 'failed' || !status.holdsResources)) {
      await db.releaseRedemptionResources(ids);
      state.phase = 'done';
    } else {
      await continueIfLong();
    }
  }
  return state;
}
