import type { Logger } from 'pino';
import { SupplierPermanentError, SupplierTransientError } from '../supplier';
import {
  ACCEPT,
  errorAnswer,
  parseJsonKeepingDigits,
  reasonOf,
  tokenAnswer,
  type ReloadlyError,
} from './reloadly-answers';
import type { ReloadlySettings } from './reloadly-settings';

// HTTP to Reloadly: the access token (asked once, kept until shortly before it expires, renewed
// once when the API refuses it), each call's deadline, and its rate limit. Neither the client
// secret nor a token is ever logged, put in an error message or returned.

/** What one call came back with. */
export type Answer =
  /** A 2xx answer, its JSON read. */
  | { kind: 'ok'; status: number; body: unknown }
  /** A 4xx or 5xx answer, with Reloadly's error body when it has one. */
  | { kind: 'refused'; status: number; error: ReloadlyError | null; retryAfterMs?: number }
  /** No answer: the deadline passed or the connection broke. A POST may still have been taken. */
  | { kind: 'lost'; why: string }
  /** A 2xx answer whose body is not JSON. */
  | { kind: 'unparseable'; status: number };

/** A rate-limit hint up to this long is waited out inside the call; a longer one is handed back. */
const MAX_INLINE_WAIT_MS = 15_000;
const MAX_INLINE_WAITS = 2;
/** A token is renewed this long before it expires (the Java SDK's 5 minutes), or at 90% of a short life. */
const RENEW_BEFORE_MS = 5 * 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How long a 429 asks us to wait: Retry-After (seconds or an HTTP date), else X-RateLimit-Reset
 * (the UNIX time the window resets, as the Java SDK reads it).
 */
export function rateLimitWaitMs(headers: Headers, now: number): number | undefined {
  const retryAfter = headers.get('retry-after')?.trim();
  if (retryAfter) {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.ceil(Number(retryAfter) * 1000);
    const at = Date.parse(retryAfter);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  const reset = headers.get('x-ratelimit-reset')?.trim();
  if (reset && /^\d+$/.test(reset)) {
    const n = Number(reset);
    // Seconds since the epoch; a value this large is already milliseconds.
    const at = n > 1e11 ? n : n * 1000;
    return Math.max(0, at - now);
  }
  return undefined;
}

export class ReloadlyClient {
  private token?: { value: string; renewAt: number };
  private tokenRequest?: Promise<string>;
  /** No call before this time: Reloadly asked us to wait (429) longer than a call may. */
  private notBefore = 0;

  constructor(
    private readonly settings: ReloadlySettings,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Calls the gift-card API with a token. A token refused (401) is renewed once and the call
   * made again; a short rate-limit wait is waited out. Throws SupplierTransientError when
   * Reloadly asks us to wait longer, SupplierPermanentError when it refuses our credentials.
   */
  async call(method: 'GET' | 'POST', path: string, deadline: number, body?: unknown): Promise<Answer> {
    const route = `${method} ${path.split('?')[0]}`;
    let renewed = false;
    return this.rateLimited(route, deadline, async () => {
      for (;;) {
        const token = await this.accessToken(deadline);
        const answer = await this.exchange(route, deadline, `${this.settings.apiUrl}${path}`, {
          method,
          headers: {
            accept: ACCEPT,
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        if (answer.kind !== 'refused' || answer.status !== 401) return answer;
        const reason = reasonOf(401, answer.error);
        if (renewed) {
          throw new SupplierPermanentError(
            `Reloadly refused a fresh access token: ${reason}; check that RELOADLY_ENV matches the credentials`,
          );
        }
        // INVALID_TOKEN or TOKEN_EXPIRED: a token it no longer takes is asked for again, once.
        renewed = true;
        if (this.token?.value === token) this.token = undefined;
        this.log.info(
          { route, errorCode: answer.error?.errorCode ?? null },
          'reloadly refused the access token; renewing it',
        );
      }
    });
  }

  /** The cached token, or a new one (one request at a time, shared by concurrent callers). */
  private async accessToken(deadline: number): Promise<string> {
    if (this.token && this.now() < this.token.renewAt) return this.token.value;
    this.tokenRequest ??= this.newToken(deadline).finally(() => {
      this.tokenRequest = undefined;
    });
    return this.tokenRequest;
  }

  private async newToken(deadline: number): Promise<string> {
    const route = 'POST /oauth/token';
    const s = this.settings;
    const answer = await this.rateLimited(route, deadline, () =>
      this.exchange(route, deadline, `${s.authUrl}/oauth/token`, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({
          client_id: s.clientId,
          client_secret: s.clientSecret,
          grant_type: 'client_credentials',
          audience: s.audience,
        }),
      }),
    );
    if (answer.kind === 'lost')
      throw new SupplierTransientError(`Reloadly's token endpoint did not answer (${answer.why})`);
    if (answer.kind === 'unparseable') throw new SupplierTransientError("Reloadly's token answer could not be read");
    if (answer.kind === 'refused') {
      const reason = reasonOf(answer.status, answer.error);
      if (answer.status >= 500 || answer.status === 408)
        throw new SupplierTransientError(`Reloadly's token endpoint failed: ${reason}`);
      throw new SupplierPermanentError(
        `Reloadly refused our client credentials: ${reason}; check RELOADLY_CLIENT_ID, RELOADLY_CLIENT_SECRET and RELOADLY_ENV`,
      );
    }
    const token = tokenAnswer.safeParse(answer.body);
    if (!token.success) {
      this.log.warn(
        { route, status: answer.status },
        'reloadly token answer has no access_token/expires_in; asking again later',
      );
      throw new SupplierTransientError("Reloadly's token answer could not be read");
    }
    const lifeMs = token.data.expires_in * 1000;
    this.token = {
      value: token.data.access_token,
      renewAt: this.now() + lifeMs - Math.min(RENEW_BEFORE_MS, lifeMs / 10),
    };
    this.log.info({ expiresInSeconds: token.data.expires_in }, 'reloadly access token obtained');
    return token.data.access_token;
  }

  /**
   * Runs `send`, waiting out a short 429 (at most twice, and only within the call's deadline); a
   * longer wait, or a third 429, is remembered (no call before it is up) and thrown as transient
   * with the time left.
   */
  private async rateLimited(route: string, deadline: number, send: () => Promise<Answer>): Promise<Answer> {
    for (let waits = 0; ; waits++) {
      const left = this.notBefore - this.now();
      if (left > 0) throw this.rateLimitError(left);
      const answer = await send();
      if (answer.kind !== 'refused' || answer.status !== 429) return answer;
      const wait = answer.retryAfterMs;
      if (
        wait !== undefined &&
        wait <= MAX_INLINE_WAIT_MS &&
        waits < MAX_INLINE_WAITS &&
        this.now() + wait < deadline
      ) {
        this.log.warn({ route, waitMs: wait }, 'reloadly rate limit: waiting as asked');
        await sleep(wait);
        continue;
      }
      this.notBefore = this.now() + (wait ?? 0);
      this.log.warn({ route, waitMs: wait ?? null }, 'reloadly rate limit: asking again later');
      throw this.rateLimitError(wait);
    }
  }

  private rateLimitError(waitMs: number | undefined): SupplierTransientError {
    const hint = waitMs === undefined ? '' : `; it asks us to wait ${Math.ceil(waitMs / 1000)} s`;
    return new SupplierTransientError(`Reloadly is rate limiting us (HTTP 429)${hint}`, { retryAfterMs: waitMs });
  }

  /** One HTTP exchange within RELOADLY_TIMEOUT_MS and the call's deadline; never throws. */
  private async exchange(route: string, deadline: number, url: string, init: RequestInit): Promise<Answer> {
    const timeoutMs = Math.min(this.settings.timeoutMs, deadline - this.now());
    if (timeoutMs <= 0) return { kind: 'lost', why: 'the call ran out of time before it was sent' };
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
      text = await res.text();
    } catch (err) {
      const why = (err as Error)?.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : 'the connection broke';
      this.log.warn({ route, why }, 'reloadly call got no answer');
      return { kind: 'lost', why };
    }
    let body: unknown;
    try {
      body = text === '' ? undefined : parseJsonKeepingDigits(text);
    } catch {
      body = undefined;
    }
    if (res.ok) {
      if (body === undefined) {
        // The body is not quoted: a card or token answer would carry secrets.
        this.log.warn(
          { route, status: res.status, contentType: res.headers.get('content-type'), bytes: text.length },
          'reloadly answer is not JSON',
        );
        return { kind: 'unparseable', status: res.status };
      }
      return { kind: 'ok', status: res.status, body };
    }
    const parsed = errorAnswer.safeParse(body);
    const error = parsed.success
      ? { message: parsed.data.message ?? parsed.data.error ?? null, errorCode: parsed.data.errorCode ?? null }
      : null;
    if (res.status >= 500 || !parsed.success) {
      this.log.warn(
        { route, status: res.status, errorCode: error?.errorCode ?? null, readable: parsed.success },
        'reloadly answered with an error',
      );
    }
    const retryAfterMs = res.status === 429 ? rateLimitWaitMs(res.headers, this.now()) : undefined;
    return { kind: 'refused', status: res.status, error, retryAfterMs };
  }
}
