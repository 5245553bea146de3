// The procurement lifecycle's shared contract (spec 3.2): ids, support updates, the state query
// and types. Workflow-safe (no Node modules): imported by the workflow, its activities, the
// support service, the admin API and the CLI.
import { defineQuery, defineUpdate } from '@temporalio/workflow';

/** One procurement per paid direct-code order, so a second start for the same order is a no-op. */
export const procurementWorkflowId = (orderId: string) => `procure:${orderId}`;

/** Spec part 6 fixes this id, which is what makes the event once per order. */
export const deliveryAttentionEventId = (orderId: string) => `order:${orderId}:order.delivery_attention`;

/** Durations and bounds from config (workflows cannot read the environment). */
export interface ProcurementTiming {
  retryBaseSeconds: number;
  retryCapSeconds: number;
  /** Rounds per attempt (from the start, or from the last `resume`) before needs_attention. */
  maxRounds: number;
  /** Time per attempt before needs_attention. */
  deadlineSeconds: number;
}

/** What Postgres says about the order: the facts every step returns. */
export interface OrderFacts {
  status: string;
  fulfillmentStatus: string | null;
  qty: number;
  /** Units obtained and stored so far (withheld from the reseller until all are in). */
  fulfilledQuantity: number;
}

/** One supplier round: what it obtained, or why it obtained nothing. */
export interface RoundResult extends OrderFacts {
  outcome: 'obtained' | 'transient' | 'permanent' | 'not_procuring';
  obtained: number;
  error: string | null;
}

export type ProcurementPhase = 'starting' | 'procuring' | 'needs_attention' | 'delivered' | 'refunded' | 'closed';

export type SupportActionName = 'resume' | 'deliver' | 'refund';

/** Who asked, and why: required for every support action (recorded in support_actions). */
export interface SupportRequest {
  actor: string;
  reason: string;
  /**
   * The support request on record in Postgres (support_requests) that this action carries out:
   * the activity acts on that row, never on the message alone.
   */
  requestId?: string;
}

export interface DeliverRequest extends SupportRequest {
  /**
   * The codes obtained by hand, one per missing unit, staged in Postgres (support_code_batches):
   * gift card codes never enter workflow history. The support request names the same batch.
   */
  batchId: string;
}

/** Carried from one run to the next by continue-as-new. */
export interface ProcurementProgress {
  rounds: number;
  roundsSinceResume: number;
  attemptStartedAt: number | null;
  emptyStreak: number;
  lastSupplierError: string | null;
  supportActions: { action: SupportActionName; actor: string; at: number }[];
}

export interface ProcurementWorkflowInput {
  orderId: string;
  accountId: string;
  externalOrderId: string | null;
  progress?: ProcurementProgress;
}

/** The `state` query: what ops see for a stuck order in the Temporal UI. */
export interface ProcurementState extends ProcurementProgress {
  orderId: string;
  phase: ProcurementPhase;
  orderStatus: string | null;
  fulfillmentStatus: string | null;
  qty: number;
  fulfilledQuantity: number;
  remaining: number;
  lastRoundAt: number | null;
  nextRoundAt: number | null;
  attentionSince: number | null;
  timing: ProcurementTiming | null;
}

/** Try the supplier again: a new attempt with fresh round and time bounds. */
export const resumeUpdate = defineUpdate<ProcurementState, [SupportRequest]>('resume');
/** Deliver codes obtained by hand for the missing units; the order is delivered with all codes. */
export const deliverManuallyUpdate = defineUpdate<ProcurementState, [DeliverRequest]>('deliverManually');
/** Refund the undelivered units to the balance; obtained codes are released with the order `refunded`. */
export const refundUpdate = defineUpdate<ProcurementState, [SupportRequest]>('refund');
export const procurementStateQuery = defineQuery<ProcurementState>('state');
