// The redemption lifecycle's shared contract: ids, signal/query definitions and types.
// Workflow-safe (no Node modules), imported by the workflow, its activities, the service and the CLI.
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** How an upstream (partner, operator, sandbox) says a redemption failed: the spec's failure codes. */
export type UpstreamFailureCode = 'fulfillment_failed' | 'rejected_by_operator';

export type RedemptionStatus = 'pending' | 'processing' | 'fulfilled' | 'failed';
export type RedemptionEventType = 'redemption.fulfilled' | 'redemption.failed';

/** One workflow per attempt, so a resubmission after a failure is a new run with its own id. */
export const redemptionWorkflowId = (redemptionId: string, attempt: number) => `redemption:${redemptionId}:${attempt}`;

/** Spec part 6: `redemption:<redemption_id>:<attempt>:<event>`, distinct per resubmission. */
export const redemptionEventId = (redemptionId: string, attempt: number, event: RedemptionEventType) =>
  `redemption:${redemptionId}:${attempt}:${event}`;

export interface AttemptRef {
  redemptionId: string;
  attempt: number;
}

export interface RedemptionWorkflowInput extends AttemptRef {
  /** Upstream status is refreshed at most once per this many seconds (spec 8). */
  refreshSeconds: number;
  /** Where a continued-as-new run picks up. */
  resume?: { phase: RedemptionPhase; upstreamRef: string | null; manual: boolean; decision: OperatorDecision | null };
}

export type RedemptionPhase = 'start' | 'waiting' | 'releasing' | 'done' | 'abandoned';

/**
 * How an attempt ended. A fulfilled one names its note only when an operator wrote it; the
 * upstream's note stays in Postgres (it may echo what the customer submitted).
 */
export type AttemptOutcome =
  | { status: 'fulfilled'; deliverable?: string }
  | { status: 'failed'; failureCode: UpstreamFailureCode; holdsResources: boolean };

/** The upstream's status as the workflow sees it: no completion note. */
export type UpstreamState =
  | { state: 'processing' }
  | { state: 'fulfilled' }
  | { state: 'failed'; failureCode: UpstreamFailureCode; holdsResources: boolean };

export interface OperatorDecision {
  decision: 'fulfill' | 'reject';
  reason: string;
  actor: string;
  /**
   * Set by the operator queue (REDEMPTION_UPSTREAM=operators): the deliverable already waits on
   * the attempt row in Postgres (never in history), and a failure names its own code and whether
   * supplier resources are still held (then a resubmission is retry_conflict until released).
   */
  queue?: { failureCode?: UpstreamFailureCode; holdsResources?: boolean };
  /** Support's decision on record in Postgres (support_requests): what the attempt's activity checks it against. */
  requestId?: string;
}

/**
 * What an outcome that came from an operator's decision is checked against in Postgres before it
 * is recorded: the operator queue's decided row, or support's request. A decision with nothing on
 * record behind it (a signal the service never sent) is refused.
 */
export interface DecisionRef {
  requestId: string | null;
  queue: boolean;
}

/** Support's request for a decision names the attempt it decides. */
export const decisionSubject = (ref: AttemptRef) => `${ref.redemptionId}:${ref.attempt}`;

export interface RedemptionWorkflowState extends AttemptRef {
  phase: RedemptionPhase;
  status: RedemptionStatus;
  manual: boolean;
  upstreamRef: string | null;
  refreshes: number;
  decision: OperatorDecision | null;
}

/** `npx wholesale support redemption fulfill|reject <id>`: an operator's decision for the current attempt. */
export const operatorDecisionSignal = defineSignal<[OperatorDecision]>('operatorDecision');
export const redemptionStateQuery = defineQuery<RedemptionWorkflowState>('state');
