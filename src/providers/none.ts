import {
  UpstreamUnavailableError,
  type RedemptionUpstream,
  type UpstreamStatus,
  type UpstreamSubmission,
} from './redemption-upstream';
import { SupplierPermanentError, type ProcureResult, type Supplier } from './supplier';

// What a deployment runs where it has no outside party of a kind (SUPPLIER_PROVIDER=none,
// REDEMPTION_UPSTREAM=none): nothing is invented, and the work goes to people instead.

/** No supplier: every direct-code purchase is refused, so the order waits in needs_attention for support to deliver. */
export class NoSupplier implements Supplier {
  async procure(): Promise<ProcureResult> {
    throw new SupplierPermanentError('no supplier is configured (SUPPLIER_PROVIDER=none); deliver the codes by hand');
  }
}

/**
 * No automatic upstream: a manual product's submission is queued for an operator's decision (the
 * admin API's fulfil or fail), an automatic one is not taken, so its attempt fails and the code
 * stays free for the customer to try again. Session pre-checks are unavailable.
 */
export class OperatorOnlyUpstream implements RedemptionUpstream {
  async validateSession(): Promise<'valid' | 'invalid'> {
    throw new UpstreamUnavailableError('no redemption upstream is configured (REDEMPTION_UPSTREAM=none)');
  }

  async submit(submission: UpstreamSubmission): Promise<{ ref: string }> {
    if (!submission.manual)
      throw new UpstreamUnavailableError('no redemption upstream is configured (REDEMPTION_UPSTREAM=none)');
    return { ref: `operator:${submission.key}` };
  }

  async status(): Promise<UpstreamStatus> {
    return { state: 'processing' };
  }
}
