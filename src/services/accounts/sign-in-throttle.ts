import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../domain/errors';
import { rateLimited, signInFailures } from '../../metrics/registry';
import { giveBackHit, hitRateLimit, type RateLimitResult } from '../rate-limit';

// Password guessing is slowed per client address, never per account alone: failed sign-ins are
// counted per email from one address and per address, so whoever guesses locks out only their own
// address, and the real person signs in from theirs. Guessing one account from many addresses is
// not stopped here; it shows as wholesale_sign_in_failures_total (an alert in docs/runbook.md).

export interface SignInLimits {
  /** Failed sign-ins per email from one client address in a window. */
  perEmailAndIp: number;
  /** Failed sign-ins from one client address in a window, whatever the email. */
  perIp: number;
  windowSeconds: number;
}

export type SignInArea = 'console' | 'account';

/** Buckets hold a hash of the email, not the address. */
const emailKey = (email: string) => createHash('sha256').update(email, 'utf8').digest('hex').slice(0, 32);

/**
 * Runs `check` (which throws ApiError `unauthorized` for wrong credentials) under the failure
 * budgets of `email` from `ip`. Every attempt takes its place in both budgets before anything is
 * checked, so attempts racing past the limit together are refused too; an attempt that was not a
 * wrong guess (a success, or an outage) gives its places back, so what stays counted is failures.
 */
export async function throttledSignIn<T>(
  em: EntityManager,
  area: SignInArea,
  who: { email: string; ip: string },
  limits: SignInLimits,
  check: () => Promise<T>,
): Promise<T> {
  const prefix = area === 'console' ? 'staff-signin' : 'signin';
  const buckets = [
    { bucket: `${prefix}-ip:${who.ip}`, limit: limits.perIp },
    { bucket: `${prefix}-email-ip:${emailKey(who.email)}:${who.ip}`, limit: limits.perEmailAndIp },
  ];
  const hits: { bucket: string; hit: RateLimitResult }[] = [];
  for (const { bucket, limit } of buckets)
    hits.push({ bucket, hit: await hitRateLimit(em, bucket, limit, limits.windowSeconds) });
  const refused = hits.find((h) => !h.hit.allowed);
  if (refused) {
    rateLimited.inc({ limit: `${area}-sign-in` });
    throw new ApiError('rate_limited', 'Too many sign-in attempts', undefined, {
      'Retry-After': String(refused.hit.retryAfter),
    });
  }
  const giveBack = () => Promise.all(hits.map(({ bucket, hit }) => giveBackHit(em, bucket, hit)));
  let result: T;
  try {
    result = await check();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'unauthorized') signInFailures.inc({ area });
    else await giveBack().catch(() => undefined);
    throw err;
  }
  // Not giving back costs the person one counted failure at most: the sign-in stands.
  await giveBack().catch(() => undefined);
  return result;
}
