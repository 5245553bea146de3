import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

// The HTTP redemption-upstream protocol (docs/redemption-upstream.md, and its OpenAPI document
// docs/redemption-upstream.openapi.json), the only thing its two sides share: the adapter this
// service calls (http-upstream.ts) and the sandbox that plays a partner (sandbox/sandbox-upstream-server.ts).
// The schemas here mirror the document; the tests hold both sides to the document itself.

export const PATHS = {
  sessionCheck: '/v1/sessions/check',
  submissions: '/v1/submissions',
  submission: (ref: string) => `/v1/submissions/${encodeURIComponent(ref)}`,
} as const;

export const HEADERS = {
  timestamp: 'x-upstream-timestamp',
  nonce: 'x-upstream-nonce',
  signature: 'x-upstream-signature',
} as const;

/** How far a request's timestamp may be from the receiver's clock, either way. */
export const MAX_SKEW_SECONDS = 300;

const NONCE = /^[A-Za-z0-9_-]{16,64}$/;
const SIGNATURE = /^v1=[0-9a-f]{64}$/;

/**
 * What is signed: the timestamp, the nonce, the method, the path relative to the base URL exactly
 * as sent (percent-encoded, with its query string) and the raw body (empty for GET), joined by "\n".
 */
export function canonicalRequest(r: {
  timestamp: string;
  nonce: string;
  method: string;
  path: string;
  body: string | Buffer;
}): Buffer {
  const head = Buffer.from(`${r.timestamp}\n${r.nonce}\n${r.method.toUpperCase()}\n${r.path}\n`, 'utf8');
  return Buffer.concat([head, typeof r.body === 'string' ? Buffer.from(r.body, 'utf8') : r.body]);
}

export function signature(secret: string, canonical: Buffer): string {
  return `v1=${createHmac('sha256', secret).update(canonical).digest('hex')}`;
}

/** The three headers of a signed request. */
export function signedHeaders(
  secret: string,
  r: { nonce: string; method: string; path: string; body: string; now?: number },
): Record<string, string> {
  const timestamp = String(Math.floor((r.now ?? Date.now()) / 1000));
  return {
    [HEADERS.timestamp]: timestamp,
    [HEADERS.nonce]: r.nonce,
    [HEADERS.signature]: signature(secret, canonicalRequest({ ...r, timestamp })),
  };
}

export type Rejection = 'invalid_signature' | 'stale_timestamp' | 'replayed_request';

/**
 * Nonces seen within the skew window: a request whose nonce was already accepted is a replay.
 * Bounded; an entry is dropped once its timestamp is out of the window anyway.
 */
export class NonceCache {
  private readonly seen = new Map<string, number>();

  constructor(private readonly max = 100_000) {}

  /** Records the nonce; false when it was already there. */
  admit(nonce: string, nowSeconds: number): boolean {
    for (const [n, at] of this.seen) {
      if (at > nowSeconds - 2 * MAX_SKEW_SECONDS && this.seen.size < this.max) break;
      this.seen.delete(n);
    }
    if (this.seen.has(nonce)) return false;
    this.seen.set(nonce, nowSeconds);
    return true;
  }
}

/** The receiver's check of a request: signature first, then freshness, then the nonce. */
export function verifyRequest(
  secret: string,
  r: { method: string; path: string; body: Buffer; header: (name: string) => string | undefined },
  nonces: NonceCache,
  now = Date.now(),
): Rejection | undefined {
  const timestamp = r.header(HEADERS.timestamp) ?? '';
  const nonce = r.header(HEADERS.nonce) ?? '';
  const given = r.header(HEADERS.signature) ?? '';
  if (!/^\d{1,12}$/.test(timestamp) || !NONCE.test(nonce) || !SIGNATURE.test(given)) return 'invalid_signature';
  const expected = Buffer.from(
    signature(secret, canonicalRequest({ timestamp, nonce, method: r.method, path: r.path, body: r.body })),
  );
  if (!timingSafeEqual(Buffer.from(given), expected)) return 'invalid_signature';
  const nowSeconds = Math.floor(now / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > MAX_SKEW_SECONDS) return 'stale_timestamp';
  if (!nonces.admit(nonce, nowSeconds)) return 'replayed_request';
  return undefined;
}

// Bodies, as the OpenAPI document's components/schemas define them.
const Text = (max: number) => z.string().min(1).max(max);
/** An opaque partner reference: printable ASCII, no spaces. */
const Ref = z.string().regex(/^[!-~]{1,200}$/);

export const SessionCheckRequest = z.strictObject({ productId: Text(200), userId: Text(500) });
export const SessionCheckAnswer = z.object({ verdict: z.enum(['valid', 'invalid']) });

export const SubmissionRequest = z.strictObject({
  key: Text(200),
  productId: Text(200),
  productName: Text(500),
  redeemInfo: z
    .record(z.string().max(200), z.string().max(4096))
    .refine((v) => Object.keys(v).length <= 64, 'at most 64 fields'),
  manual: z.boolean(),
});
export const SubmissionAnswer = z.object({ ref: Ref });

export const StatusAnswer = z.discriminatedUnion('state', [
  z.object({ state: z.literal('processing') }),
  z.object({ state: z.literal('fulfilled'), deliverable: z.string().max(4000) }),
  z.object({
    state: z.literal('failed'),
    failureCode: z.enum(['fulfillment_failed', 'rejected_by_operator']),
    holdsResources: z.boolean(),
  }),
]);

export const ERROR_CODES = [
  'invalid_request',
  'invalid_signature',
  'stale_timestamp',
  'replayed_request',
  'unknown_ref',
  'key_conflict',
  'unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
export const ErrorAnswer = z.object({ error: z.enum(ERROR_CODES), message: z.string().max(1000) });
