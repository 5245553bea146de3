import { condition, patched, proxyActivities, setHandler } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks-activities';
import {
  backoffSeconds,
  retryNowSignal,
  type DeliveryWorkflowInput,
  type DeliveryWorkflowResult,
} from '../src/contracts/webhooks-contract';
import { untilPostgresAnswers } from './activity-options';

/** A manual retry that arrived while the attempt that ended the delivery was in flight is sent. */
const retryAfterEndPatch = 'retry-after-end';

/**
 * One webhook delivery, keyed by `delivery:<deliveryId>` (spec part 6). Each attempt is one
 * activity; between failed attempts the workflow waits on a durable timer, base doubling up to
 * the cap, for `maxAttempts` attempts, after which the delivery is failed. `retryNow` (a manual
 * retry) cuts the wait short and grants a fresh budget.
 */
export async function webhookDeliveryWorkflow(input: DeliveryWorkflowInput): Promise<DeliveryWorkflowResult> {
  // Retries are for database or worker trouble only (HTTP failures are results). The POST is
  // bounded by the receiver's deadline; the rest is a few small queries.
  const { attemptDelivery } = proxyActivities<WebhookActivities>({
    ...untilPostgresAnswers,
    startToCloseTimeout: input.timeoutMs + 30_000,
  });

  let usedThisRun = 0;
  let retryRequested = false;
  setHandler(retryNowSignal, () => {
    retryRequested = true;
    usedThisRun = 0;
  });

  for (;;) {
    retryRequested = false;
    const attempt = usedThisRun + 1;
    const wait =
      attempt < input.maxAttempts ? backoffSeconds(attempt, input.retryBaseSeconds, input.retryCapSeconds) : null;
    const result = await attemptDelivery({ deliveryId: input.deliveryId, retryInSeconds: wait });
    usedThisRun++;

    // The retry reset the row after this attempt read it (a succeeded delivery sent again, a
    // cancelled one whose webhook is set again): ending here would leave the row pending with no
    // workflow until the reconciler's sweep.
    if (
      retryRequested &&
      (result.outcome === 'succeeded' || result.outcome === 'cancelled') &&
      patched(retryAfterEndPatch)
    )
      continue;
    if (result.outcome === 'succeeded' || result.outcome === 'cancelled' || result.outcome === 'gone') {
      return { outcome: result.outcome, attempts: result.attempts };
    }
    // A manual retry that arrived during the attempt sends again at once.
    if (retryRequested) continue;
    if (result.outcome === 'failed' || wait === null) return { outcome: 'failed', attempts: result.attempts };
    if (wait > 0) await condition(() => retryRequested, wait * 1000);
  }
}
