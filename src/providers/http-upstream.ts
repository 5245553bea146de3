import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { z } from 'zod';
import {
  UpstreamUnavailableError,
  type RedemptionUpstream,
  type UpstreamStatus,
  type UpstreamSubmission,
} from './redemption-upstream';
import {
  ErrorAnswer,
  PATHS,
  SessionCheckAnswer,
  signedHeaders,
  StatusAnswer,
  SubmissionAnswer,
} from './upstream-protocol';

// REDEMPTION_UPSTREAM=http (and the sandbox, which speaks the same protocol): the RedemptionUpstream
// port over the partner protocol of docs/redemption-upstream.md. Every request is signed; every
// answer is checked against the protocol before it is believed. Anything short of a valid 2xx
// answer (a timeout, a broken connection, a 5xx, a refusal, a body that is not the protocol's) is
// UpstreamUnavailableError: the activities retry it, the pre-check tells the customer to retry.
// The secret, the signature and the submitted redeem details are never logged or put in an error.

export interface HttpUpstreamSettings {
  /** The partner's base URL; the protocol's paths (/v1/...) are appended to it. */
  baseUrl: string;
  secret: string;
  timeoutMs: number;
}

type Operation = 'session_check' | 'submit' | 'status';

export class HttpRedemptionUpstream implements RedemptionUpstream {
  private readonly baseUrl: string;

  constructor(
    private readonly settings: HttpUpstreamSettings,
    private readonly log: Logger,
  ) {
    this.baseUrl = settings.baseUrl.replace(/\/+$/, '');
  }

  async validateSession(input: { productId: string; userId: string }): Promise<'valid' | 'invalid'> {
    const answer = await this.call('session_check', 'POST', PATHS.sessionCheck, SessionCheckAnswer, {
      productId: input.productId,
      userId: input.userId,
    });
    return answer.verdict;
  }

  async submit(submission: UpstreamSubmission): Promise<{ ref: string }> {
    const { key, productId, productName, redeemInfo, manual } = submission;
    const answer = await this.call('submit', 'POST', PATHS.submissions, SubmissionAnswer, {
      key,
      productId,
      productName,
      redeemInfo,
      manual,
    });
    return { ref: answer.ref };
  }

  async status(ref: string): Promise<UpstreamStatus> {
    return this.call('status', 'GET', PATHS.submission(ref), StatusAnswer);
  }

  private async call<T extends z.ZodType>(
    operation: Operation,
    method: 'GET' | 'POST',
    path: string,
    answer: T,
    payload?: unknown,
  ): Promise<z.infer<T>> {
    const body = payload === undefined ? '' : JSON.stringify(payload);
    // A fresh nonce per request, retries included: the partner refuses a nonce it has seen.
    const headers = signedHeaders(this.settings.secret, {
      nonce: randomBytes(18).toString('base64url'),
      method,
      path,
      body,
    });
    const started = Date.now();
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
        body: body || undefined,
        redirect: 'error',
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      this.log.warn(
        { operation, ms: Date.now() - started, reason: timedOut ? 'timeout' : 'network' },
        'redemption upstream did not answer',
      );
      throw new UpstreamUnavailableError(
        `redemption upstream ${operation}: ${timedOut ? `no answer within ${this.settings.timeoutMs} ms` : 'connection failed'}`,
      );
    }
    if (res.status < 200 || res.status > 299) {
      // Only the protocol's error code is kept: a partner's message could echo what it was sent.
      const code = ErrorAnswer.safeParse(parseJson(text)).data?.error ?? null;
      // A 4xx means the two sides disagree (a wrong secret, a clock off): someone must look.
      const level = res.status >= 500 ? 'warn' : 'error';
      this.log[level]({ operation, status: res.status, error: code }, 'redemption upstream refused the request');
      throw new UpstreamUnavailableError(
        `redemption upstream ${operation}: HTTP ${res.status}${code ? ` ${code}` : ''}`,
      );
    }
    const parsed = answer.safeParse(parseJson(text));
    if (!parsed.success) {
      // The issues name fields and expectations, never the values received.
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.code}`).slice(0, 5);
      this.log.error({ operation, status: res.status, issues }, 'redemption upstream answered outside the protocol');
      throw new UpstreamUnavailableError(`redemption upstream ${operation}: an answer outside the protocol`);
    }
    return parsed.data;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
