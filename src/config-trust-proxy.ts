import { isIP } from 'node:net';
import { z } from 'zod';

// TRUST_PROXY: which peers may say who the client is (X-Forwarded-For), given to Express's
// `trust proxy`. Every per-IP budget (sign-in, sign-up, the redemption site, checkout links) counts
// the address this resolves: trusting too little puts every client behind a load balancer in one
// bucket, trusting too much lets any client pick its own address.

/** A hop count (the nearest N proxies), or addresses and CIDRs, with Express's names for ranges. */
export type TrustProxy = number | string[];

const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function validEntry(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/** TRUST_PROXY parsed: `2` (hops), or `loopback,10.0.0.0/8,2001:db8::/32`; an error names what is wrong. */
export function parseTrustProxy(raw: string): { value: TrustProxy } | { error: string } {
  const text = raw.trim();
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    return hops <= 10 ? { value: hops } : { error: 'a hop count is at most 10' };
  }
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const bad = entries.filter((e) => !validEntry(e));
  if (entries.length === 0 || bad.length > 0) {
    return {
      error:
        'expected a hop count (e.g. 1) or comma-separated IP addresses, CIDRs and loopback, linklocal or uniquelocal',
    };
  }
  return { value: entries };
}

/** The TRUST_PROXY setting: `loopback` (a proxy on this host) unless given. */
export const trustProxySetting = z
  .string()
  .default('loopback')
  .transform((raw, ctx) => {
    const parsed = parseTrustProxy(raw);
    if ('value' in parsed) return parsed.value;
    ctx.addIssue({ code: 'custom', message: parsed.error });
    return z.NEVER;
  });
