// The webhook delivery lifecycle's shared contract: ids, the signal, input and result types and
// the backoff rule. Workflow-safe (no Node modules), imported by the workflow, its activities
// and the services that start it.
import { defineSignal } from '@temporalio/workflow';

export const deliveryWorkflowId = (deliveryId: string) => `delivery:${deliveryId}`;

export interface DeliveryWorkflowInput {
  deliveryId: string;
  /**
   * The attempt budget (WEBHOOK_MAX_ATTEMPTS); a manual retry gives a fresh one. Postgres holds the
   * delivery to it across runs (the attempt activity's claim), so a run started again spends only
   * what an earlier run left.
   */
  maxAttempts: number;
  retryBaseSeconds: number;
  retryCapSeconds: number;
  /** The receiver's deadline for a 2xx (WEBHOOK_TIMEOUT_MS); bounds the attempt activity. */
  timeoutMs: number;
}

export interface DeliveryAttemptInput {
  deliveryId: string;
  /** Seconds until the next attempt if this one fails; null when it is the last of the run. */
  retryInSeconds: number | null;
}

export type DeliveryOutcome = 'succeeded' | 'retrying' | 'failed' | 'cancelled' | 'gone';

export interface DeliveryAttemptResult {
  outcome: DeliveryOutcome;
  /** The delivery's attempt counter after this attempt (it is never reset). */
  attempts: number;
  statusCode: number | null;
  error: string | null;
}

export interface DeliveryWorkflowResult {
  outcome: DeliveryOutcome;
  attempts: number;
}

/** Wakes a delivery waiting between attempts and gives it a fresh attempt budget. */
export const retryNowSignal = defineSignal('retryNow');

/** The wait after the n-th failed attempt of a run: base, doubling, capped. */
export function backoffSeconds(failedAttempt: number, baseSeconds: number, capSeconds: number): number {
  return Math.min(baseSeconds * 2 ** Math.max(0, failedAttempt - 1), capSeconds);
}
