import { createHmac } from 'node:crypto';
import { promises as dns, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { ApiError } from '../../domain/errors';
import {
  addressAllowed,
  checkWebhookUrl,
  classifyAddress,
  describeAddressClass,
  type UrlPolicy,
} from '../../domain/webhook-url';

// One webhook POST (spec part 6): the signed body, the headers, a hard deadline, no redirects,
// and a DNS guard that checks every address a name resolves to at the moment of connecting, so
// a name that was public when configured cannot be re-pointed inside the network later.

export type Resolver = (hostname: string, family?: number) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname, family) => dns.lookup(hostname, { all: true, family: family ?? 0 });

export const USER_AGENT = 'Wholesale-Webhooks/1.0';

export interface StoredEvent {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/** The envelope merged flat with the payload; the envelope wins a name clash. */
export function webhookBody(event: StoredEvent): { raw: string; timestamp: number } {
  const timestamp = Math.floor(event.createdAt.getTime() / 1000);
  const { eventId: _e, event: _t, timestamp: _s, ...payload } = event.payload;
  return { raw: JSON.stringify({ eventId: event.id, event: event.type, timestamp, ...payload }), timestamp };
}

/** `sha256=` + hex HMAC-SHA256 of the raw body, keyed with the signing secret. */
export function signBody(secret: string, raw: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
}

class DestinationNotAllowed extends Error {
  readonly code = 'EDESTINATION';
}

async function checkedAddresses(
  hostname: string,
  policy: UrlPolicy,
  resolver: Resolver,
  family?: number,
): Promise<LookupAddress[]> {
  const addresses = await resolver(hostname, family);
  if (addresses.length === 0) throw Object.assign(new Error('host has no addresses'), { code: 'ENOTFOUND' });
  for (const a of addresses) {
    const c = classifyAddress(a.address);
    if (!addressAllowed(c, policy)) throw new DestinationNotAllowed(`host resolves to ${describeAddressClass(c)}`);
  }
  return addresses;
}

/** A `lookup` for http(s).request that refuses a name if any of its addresses is not public. */
export function guardedLookup(policy: UrlPolicy, resolver: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    checkedAddresses(
      hostname,
      policy,
      resolver,
      options.family === 4 || options.family === 6 ? options.family : undefined,
    ).then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/**
 * What PUT /webhook accepts: the URL rules, then (for a name) every address it resolves to now.
 * Returns the normalized URL that deliveries will use.
 */
export async function validateWebhookUrl(
  raw: string,
  policy: UrlPolicy,
  resolver: Resolver = systemResolver,
): Promise<string> {
  const check = checkWebhookUrl(raw, policy);
  if (!check.ok) throw new ApiError('invalid_input', `Invalid webhook url: ${check.reason}`, { field: 'url' });
  if (!check.isIp) {
    try {
      await checkedAddresses(check.host, policy, resolver);
    } catch (err) {
      const reason = err instanceof DestinationNotAllowed ? err.message : 'host does not resolve';
      throw new ApiError('invalid_input', `Invalid webhook url: ${reason}`, { field: 'url' });
    }
  }
  return check.href;
}

export interface WebhookRequest {
  url: string;
  secret: string;
  eventId: string;
  /** Unique per attempt. */
  deliveryId: string;
  timestamp: number;
  raw: string;
}

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  /** A short reason for a failure; never the URL, the secret or the receiver's body. */
  error: string | null;
}

/**
 * POSTs once and reports the result; it never throws and never retries (the delivery workflow's
 * backoff is the retry). Success is a 2xx status within `timeoutMs`.
 */
export function sendWebhook(
  req: WebhookRequest,
  opts: { policy: UrlPolicy; timeoutMs: number; resolver?: Resolver },
): Promise<SendResult> {
  const check = checkWebhookUrl(req.url, opts.policy);
  if (!check.ok) return Promise.resolve({ ok: false, statusCode: null, error: `url not allowed: ${check.reason}` });
  const body = Buffer.from(req.raw, 'utf8');
  const transport = check.url.protocol === 'https:' ? https : http;

  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const settle = (r: SendResult) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    const request = transport.request(
      check.url,
      {
        method: 'POST',
        agent: false,
        lookup: guardedLookup(opts.policy, opts.resolver),
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(body.length),
          'User-Agent': USER_AGENT,
          'X-Wholesale-Signature': signBody(req.secret, body),
          'X-Wholesale-Event-Id': req.eventId,
          'X-Wholesale-Delivery-Id': req.deliveryId,
          'X-Wholesale-Timestamp': String(req.timestamp),
        },
      },
      (res) => {
        const code = res.statusCode ?? 0;
        // The body is not needed; drain it within the same deadline, then close.
        res.on('end', () => clearTimeout(deadline));
        res.on('error', () => undefined);
        res.resume();
        if (code >= 200 && code < 300) settle({ ok: true, statusCode: code, error: null });
        else
          settle({
            ok: false,
            statusCode: code,
            error: code >= 300 && code < 400 ? `HTTP ${code} (redirects are not followed)` : `HTTP ${code}`,
          });
      },
    );
    const deadline = setTimeout(() => {
      settle({ ok: false, statusCode: null, error: `no response within ${opts.timeoutMs} ms` });
      request.destroy();
    }, opts.timeoutMs);
    request.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(deadline);
      settle({ ok: false, statusCode: null, error: describeNetworkError(err) });
    });
    request.end(body);
  });
}

function describeNetworkError(err: NodeJS.ErrnoException): string {
  if (err instanceof DestinationNotAllowed) return `destination not allowed: ${err.message}`;
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host does not resolve';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return err.code?.startsWith('ERR_TLS') || err.code?.includes('CERT')
        ? `TLS error (${err.code})`
        : `connection error (${err.code ?? 'unknown'})`;
  }
}
