import type { Orm } from '../db/orm';
import { decisionOf, enqueueAttempt } from '../db/operator-queue-store';
import { attemptRow } from '../db/redemption-attempts-store';
import type {
  RedemptionUpstream,
  UpstreamFailureCode,
  UpstreamStatus,
  UpstreamSubmission,
} from './redemption-upstream';

// REDEMPTION_UPSTREAM=operators: the upstream is people working a durable queue in Postgres
// (src/services/redemptions/operator-queue.ts). A submission of any product becomes a queue row; its status
// is whatever the claim holder decided there. The redemption workflow is signalled on each
// decision, and its regular refresh reads the same row, so a lost signal only delays an outcome.

/** `<redemptionId>:<attempt>`, the submission's idempotency key, back into its parts. */
function attemptOfKey(key: string): { redemptionId: string; attempt: number } {
  const at = key.lastIndexOf(':');
  return { redemptionId: key.slice(0, at), attempt: Number(key.slice(at + 1)) };
}

const PREFIX = 'operators:';

export class OperatorQueueUpstream implements RedemptionUpstream {
  constructor(private readonly orm: Orm) {}

  /** There is no third party to ask: the operator checks the session when working the claim. */
  async validateSession(): Promise<'valid' | 'invalid'> {
    return 'valid';
  }

  /** Queues the attempt (once); the redeem details stay where the submission staged them. */
  async submit(submission: UpstreamSubmission): Promise<{ ref: string }> {
    await enqueueAttempt(this.orm.em.fork(), attemptOfKey(submission.key), submission.productId);
    return { ref: `${PREFIX}${submission.key}` };
  }

  async status(ref: string): Promise<UpstreamStatus> {
    const em = this.orm.em.fork();
    const attempt = attemptOfKey(ref.slice(PREFIX.length));
    const decided = await decisionOf(em, attempt);
    if (!decided?.outcome) return { state: 'processing' };
    if (decided.outcome === 'failed') {
      return {
        state: 'failed',
        failureCode: decided.failure_code as UpstreamFailureCode,
        holdsResources: decided.holds_resources,
      };
    }
    // The holder's deliverable waits on the attempt row (masked), where the fulfil put it.
    const row = await attemptRow(em, attempt);
    return { state: 'fulfilled', deliverable: row?.upstream_deliverable ?? 'Fulfilled by an operator.' };
  }
}
