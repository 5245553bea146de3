// The built-in redemption upstream: a partner played in-process, scriptable per product, served
// over the partner protocol by ./sandbox-upstream-server.ts.
import {
  UpstreamUnavailableError,
  type RedemptionUpstream,
  type UpstreamFailureCode,
  type UpstreamStatus,
  type UpstreamSubmission,
} from '../redemption-upstream';

/** How the sandbox answers one submission. */
export interface SandboxScript {
  outcome: 'fulfilled' | 'failed';
  /** Status calls answered `processing` before the outcome is reported. */
  polls: number;
  /** After a failure, status calls that still report held resources. */
  holdPolls: number;
  failureCode: UpstreamFailureCode;
  /** Completion note; `{target}` is replaced by the first submitted value (the upstream echoes it). */
  deliverable: string;
}

interface Ticket {
  submission: UpstreamSubmission;
  script: SandboxScript;
  polls: number;
}

const MAX_KEPT = 500;
const MAX_TICKETS = 10_000;

const DEFAULT_SCRIPT: SandboxScript = {
  outcome: 'fulfilled',
  polls: 0,
  holdPolls: 0,
  failureCode: 'fulfillment_failed',
  deliverable: '{product} activated for {target}.',
};

/**
 * In-process sandbox. By default auto products fulfil on the first status refresh, and manual
 * products wait for the operator. The providers create one at start (`Providers.sandboxUpstream`), which the API
 * serves under /sandbox-upstream (./sandbox-upstream-server.ts) and tests script; the worker and
 * the API reach it through the HTTP adapter, as they would reach a partner.
 */
export class SandboxRedemptionUpstream implements RedemptionUpstream {
  private scripts = new Map<string, Partial<SandboxScript>>();
  private queues = new Map<string, Partial<SandboxScript>[]>();
  private tickets = new Map<string, Ticket>();
  private sessionCheck: 'up' | 'down' | 'reject' = 'up';
  /** Every accepted submission, oldest first (what the supplier was sent). */
  readonly submissions: UpstreamSubmission[] = [];

  /** The standing script for a product's submissions. */
  script(productId: string, script: Partial<SandboxScript>): this {
    this.scripts.set(productId, script);
    return this;
  }

  /** Scripts for the next submissions of a product, one each, before the standing script applies. */
  enqueue(productId: string, ...scripts: Partial<SandboxScript>[]): this {
    this.queues.set(productId, [...(this.queues.get(productId) ?? []), ...scripts]);
    return this;
  }

  setSessionCheck(state: 'up' | 'down' | 'reject'): this {
    this.sessionCheck = state;
    return this;
  }

  /** The supplier lets go of every failed attempt's resources: the next status call says so. */
  releaseHeldResources(): void {
    for (const ticket of this.tickets.values()) ticket.script = { ...ticket.script, holdPolls: 0 };
  }

  reset(): void {
    this.scripts.clear();
    this.queues.clear();
    this.sessionCheck = 'up';
  }

  async validateSession(): Promise<'valid' | 'invalid'> {
    if (this.sessionCheck === 'down') throw new UpstreamUnavailableError('session pre-check unavailable (sandbox)');
    return this.sessionCheck === 'reject' ? 'invalid' : 'valid';
  }

  async submit(submission: UpstreamSubmission): Promise<{ ref: string }> {
    const ref = `sbx:${submission.key}`;
    if (!this.tickets.has(ref)) {
      const queued = this.queues.get(submission.productId)?.shift();
      const script = { ...DEFAULT_SCRIPT, ...this.scripts.get(submission.productId), ...queued };
      this.tickets.set(ref, { submission, script, polls: 0 });
      this.submissions.push(submission);
      // A long-running demo keeps a bounded history (Maps iterate oldest first).
      if (this.submissions.length > MAX_KEPT) this.submissions.splice(0, this.submissions.length - MAX_KEPT);
      if (this.tickets.size > MAX_TICKETS) this.tickets.delete(this.tickets.keys().next().value!);
    }
    return { ref };
  }

  async status(ref: string): Promise<UpstreamStatus> {
    const ticket = this.tickets.get(ref);
    // A ticket lost with a restarted process: the sandbox reports it done, holding nothing.
    if (!ticket) return { state: 'fulfilled', deliverable: 'Activated (sandbox).' };
    if (ticket.submission.manual) return { state: 'processing' };
    const n = ticket.polls++;
    const { script } = ticket;
    if (n < script.polls) return { state: 'processing' };
    if (script.outcome === 'fulfilled') {
      const target = Object.values(ticket.submission.redeemInfo)[0] ?? 'the account';
      return {
        state: 'fulfilled',
        deliverable: script.deliverable
          .replaceAll('{product}', ticket.submission.productName)
          .replaceAll('{target}', target),
      };
    }
    return { state: 'failed', failureCode: script.failureCode, holdsResources: n - script.polls < script.holdPolls };
  }
}
