import {
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { RedemptionActivities } from '../activities/redemptions-activities';
import { fewTries, untilPostgresAnswers } from './activity-options';
import {
  operatorDecisionSignal,
  redemptionStateQuery,
  type AttemptOutcome,
  type DecisionRef,
  type OperatorDecision,
  type RedemptionWorkflowInput,
  type RedemptionWorkflowState,
  type UpstreamState,
} from '../src/contracts/redemptions-contract';

/**
 * One redemption attempt, keyed by `redemption:<redemptionId>:<attempt>` (spec 3.4):
 * pending → processing (submitted upstream) → the upstream status refreshed at most once per
 * `refreshSeconds` → fulfilled or failed. Manual products wait for an operator decision instead
 * of polling. A failed attempt that still holds supplier resources keeps watching the upstream
 * until they are released, so a resubmission is `retry_conflict` until then.
 */
export async function redemptionWorkflow(input: RedemptionWorkflowInput): Promise<RedemptionWorkflowState> {
  const attempt = new RedemptionAttempt(input);
  attempt.register();
  if (attempt.state.phase === 'start') await attempt.submit();
  if (attempt.state.phase === 'waiting') await attempt.awaitResult();
  if (attempt.state.phase === 'releasing') await attempt.awaitRelease();
  return attempt.state;
}

/** A run that met a queue decision on a worker from before the queue fields replays its old outcome. */
const OPERATOR_QUEUE_PATCH = 'operator-queue-outcome';

function operatorOutcome(d: OperatorDecision): AttemptOutcome {
  // The operator queue's decision: the deliverable is on the attempt row, the failure is named.
  if (d.queue && patched(OPERATOR_QUEUE_PATCH)) {
    return d.decision === 'fulfill'
      ? { status: 'fulfilled' }
      : {
          status: 'failed',
          failureCode: d.queue.failureCode ?? 'rejected_by_operator',
          holdsResources: d.queue.holdsResources ?? false,
        };
  }
  return d.decision === 'fulfill'
    ? {
        status: 'fulfilled',
        deliverable: d.reason ? `Fulfilled by an operator: ${d.reason}` : 'Fulfilled by an operator.',
      }
    : { status: 'failed', failureCode: 'rejected_by_operator', holdsResources: false };
}

/** Decisions held back while the first is checked: a refused one gives way to the next. */
const MAX_LATER_DECISIONS = 10;

const decisionRef = (d: OperatorDecision): DecisionRef => ({
  requestId: d.requestId ?? null,
  queue: d.queue !== undefined,
});

/** The attempt's state and its steps; the operator's decision is its one message handler. */
class RedemptionAttempt {
  readonly state: RedemptionWorkflowState;
  private readonly laterDecisions: OperatorDecision[] = [];
  private readonly refreshMs: number;
  private readonly ids: { redemptionId: string; attempt: number };
  // Postgres steps retry until the database is back; a lost attempt is given up after a few seconds.
  private readonly db: RedemptionActivities;
  private readonly visibility: RedemptionActivities;
  // Upstream calls never retry faster than the refresh cadence.
  private readonly supplier: RedemptionActivities;

  constructor(private readonly input: RedemptionWorkflowInput) {
    this.refreshMs = input.refreshSeconds * 1000;
    this.ids = { redemptionId: input.redemptionId, attempt: input.attempt };
    this.state = {
      ...this.ids,
      phase: input.resume?.phase ?? 'start',
      status: !input.resume ? 'pending' : input.resume.phase === 'releasing' ? 'failed' : 'processing',
      manual: input.resume?.manual ?? false,
      upstreamRef: input.resume?.upstreamRef ?? null,
      refreshes: 0,
      decision: input.resume?.decision ?? null,
    };
    this.db = proxyActivities<RedemptionActivities>(untilPostgresAnswers);
    this.visibility = proxyActivities<RedemptionActivities>(
      fewTries('30 seconds', {
        retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 12 },
      }),
    );
    this.supplier = proxyActivities<RedemptionActivities>(
      fewTries('30 seconds', {
        retry: { initialInterval: this.refreshMs, maximumInterval: this.refreshMs * 10, maximumAttempts: 10 },
      }),
    );
  }

  register(): void {
    setHandler(redemptionStateQuery, () => this.state);
    // The first decision stands; a second one (a double click, a second operator) changes nothing,
    // unless the first had nothing on record behind it and was refused.
    setHandler(operatorDecisionSignal, (decision) => {
      if (this.state.decision === null) this.state.decision = decision;
      else if (this.laterDecisions.length < MAX_LATER_DECISIONS) this.laterDecisions.push(decision);
    });
  }

  /** pending → processing: the attempt's row is visible, and the upstream has taken the submission. */
  async submit(): Promise<void> {
    const { state } = this;
    let begun: { state: 'ready' | 'finished'; manual: boolean };
    try {
      begun = await this.visibility.beginRedemptionAttempt(this.ids);
    } catch (err) {
      if (isCancellation(err)) throw err;
      state.phase = 'abandoned'; // its submission never committed
      return;
    }
    if (begun.state === 'finished') {
      state.phase = 'done';
      return;
    }
    state.manual = begun.manual;
    state.status = 'processing';
    try {
      state.upstreamRef = (await this.supplier.submitRedemptionUpstream(this.ids)).ref;
    } catch (err) {
      if (isCancellation(err)) throw err;
      await this.finish({ status: 'failed', failureCode: 'fulfillment_failed', holdsResources: false });
      state.phase = 'done';
      return;
    }
    state.phase = 'waiting';
  }

  /**
   * processing → fulfilled or failed; a failure that holds supplier resources is then released. An
   * operator's decision that Postgres does not back is refused, and the next one is waited for.
   */
  async awaitResult(): Promise<void> {
    for (;;) {
      const { outcome, decision } = await this.outcome();
      if (await this.finish(outcome, decision)) {
        this.state.phase = outcome.status === 'failed' && outcome.holdsResources ? 'releasing' : 'done';
        return;
      }
      this.state.decision = this.laterDecisions.shift() ?? null;
    }
  }

  /** Until the upstream lets go of the failed attempt's resources (a resubmission is retry_conflict until then). */
  async awaitRelease(): Promise<void> {
    while (this.state.phase === 'releasing') {
      await sleep(this.refreshMs);
      const status = await this.refresh();
      if (status && (status.state !== 'failed' || !status.holdsResources)) {
        await this.db.releaseRedemptionResources(this.ids);
        this.state.phase = 'done';
      } else {
        await this.continueIfLong();
      }
    }
  }

  /** Until an operator decides (manual products) or the upstream reports a result; and which decision, if one. */
  private async outcome(): Promise<{ outcome: AttemptOutcome; decision: OperatorDecision | null }> {
    const { state } = this;
    const decided = () => ({ outcome: operatorOutcome(state.decision!), decision: state.decision });
    if (state.manual) {
      await condition(() => state.decision !== null);
      return decided();
    }
    for (;;) {
      // The durable timer between refreshes; an operator may still decide a stuck redemption.
      if (await condition(() => state.decision !== null, this.refreshMs)) return decided();
      const status = await this.refresh();
      if (status?.state === 'fulfilled') return { outcome: { status: 'fulfilled' }, decision: null };
      if (status?.state === 'failed')
        return {
          outcome: { status: 'failed', failureCode: status.failureCode, holdsResources: status.holdsResources },
          decision: null,
        };
      await this.continueIfLong();
    }
  }

  private async refresh(): Promise<UpstreamState | undefined> {
    this.state.refreshes++;
    try {
      return await this.supplier.redemptionUpstreamStatus({ ...this.ids, upstreamRef: this.state.upstreamRef! });
    } catch (err) {
      if (isCancellation(err)) throw err;
      return undefined; // the upstream stayed down for a while; ask again at the next refresh
    }
  }

  /** Records the outcome; false when it came from a decision that Postgres does not back (nothing recorded). */
  private async finish(outcome: AttemptOutcome, decision: OperatorDecision | null = null): Promise<boolean> {
    const recorded = await this.db.finishRedemptionAttempt({
      ...this.ids,
      outcome,
      ...(decision ? { decision: decisionRef(decision) } : {}),
    });
    if (recorded === 'refused') return false;
    this.state.status = outcome.status;
    return true;
  }

  /** A long wait hands over to a fresh run that picks up where this one is. */
  private async continueIfLong(): Promise<void> {
    if (!workflowInfo().continueAsNewSuggested) return;
    const { phase, upstreamRef, manual, decision } = this.state;
    await continueAsNew<typeof redemptionWorkflow>({ ...this.input, resume: { phase, upstreamRef, manual, decision } });
  }
}
