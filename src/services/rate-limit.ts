import type { EntityManager } from '@mikro-orm/postgresql';
import { countHit, pruneRateLimits, uncountHit } from '../db/rate-limits-store';

export interface RateLimitResult {
  allowed: boolean;
  remaining: number;
  /** Unix seconds when the window resets. */
  resetAt: number;
  retryAfter: number;
  /** The window this hit was counted in (to give it back). */
  windowStart: Date;
}

/** The fixed window a hit at `now` falls in. */
export interface RateWindow {
  start: Date;
  seconds: number;
  now: number;
}

export function rateWindow(windowSeconds: number, now = Date.now()): RateWindow {
  const windowMs = windowSeconds * 1000;
  return { start: new Date(Math.floor(now / windowMs) * windowMs), seconds: windowSeconds, now };
}

/** What the window's count means for the hit that made it `count`. */
export function rateLimitResult(count: number, limit: number, window: RateWindow): RateLimitResult {
  const resetAtMs = window.start.getTime() + window.seconds * 1000;
  return {
    allowed: count <= limit,
    remaining: Math.max(0, limit - count),
    resetAt: Math.ceil(resetAtMs / 1000),
    retryAfter: Math.max(1, Math.ceil((resetAtMs - window.now) / 1000)),
    windowStart: window.start,
  };
}

/**
 * A budget as last counted (`limit`, `remaining`, `resetAt` in unix seconds), as it stands at
 * `now` without counting anything: once its window has reset, the whole limit in the window now.
 */
export function budgetStanding(
  seen: { limit: number; remaining: number; resetAt: number; windowSeconds: number },
  now = Date.now(),
): { remaining: number; resetAt: number } {
  if (now < seen.resetAt * 1000) return { remaining: seen.remaining, resetAt: seen.resetAt };
  const window = rateWindow(seen.windowSeconds, now);
  return { remaining: seen.limit, resetAt: Math.ceil((window.start.getTime() + seen.windowSeconds * 1000) / 1000) };
}

/** Drops old windows now and then (one hit in a hundred), so the table stays small. */
export async function pruneSometimes(em: EntityManager): Promise<void> {
  if (Math.random() < 0.01) await pruneRateLimits(em);
}

/** Counts one hit in a fixed window kept in Postgres, so several API processes share a budget. */
export async function hitRateLimit(
  em: EntityManager,
  bucket: string,
  limit: number,
  windowSeconds: number,
): Promise<RateLimitResult> {
  const window = rateWindow(windowSeconds);
  const count = await countHit(em, bucket, window.start);
  await pruneSometimes(em);
  return rateLimitResult(count, limit, window);
}

/** Gives back a hit counted by hitRateLimit: an attempt that turned out not to count against the budget. */
export async function giveBackHit(em: EntityManager, bucket: string, hit: RateLimitResult): Promise<void> {
  await uncountHit(em, bucket, hit.windowStart);
}
