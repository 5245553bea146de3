// The supplier's redemption upstream (ARCHITECTURE "Providers are ports"): it takes a submission,
// reports its status, and pre-checks third-party sessions. Behind it: a partner over HTTP
// (http-upstream.ts), the operator queue, or the built-in sandbox (sandbox/sandbox-upstream.ts),
// scriptable per product so tests and demos can drive every outcome, served over the same protocol.

import type { UpstreamFailureCode } from '../contracts/redemptions-contract';

export type { UpstreamFailureCode };

export type UpstreamStatus =
  | { state: 'processing' }
  | { state: 'fulfilled'; deliverable: string }
  /** `holdsResources`: the failed attempt still holds supplier resources; a resubmission must wait. */
  | { state: 'failed'; failureCode: UpstreamFailureCode; holdsResources: boolean };

export interface UpstreamSubmission {
  /** Idempotency key of the attempt: `<redemptionId>:<attempt>`. A repeated submit returns the same ref. */
  key: string;
  productId: string;
  productName: string;
  /** Normalized values, passwords included (they are never stored by us). */
  redeemInfo: Record<string, string>;
  /** Manual products are queued for an operator; their status stays `processing`. */
  manual: boolean;
}

export interface RedemptionUpstream {
  /** Throws UpstreamUnavailableError when the pre-check cannot be made. */
  validateSession(input: { productId: string; userId: string }): Promise<'valid' | 'invalid'>;
  submit(submission: UpstreamSubmission): Promise<{ ref: string }>;
  status(ref: string): Promise<UpstreamStatus>;
}

export class UpstreamUnavailableError extends Error {
  constructor(message = 'upstream unavailable') {
    super(message);
    this.name = 'UpstreamUnavailableError';
  }
}
