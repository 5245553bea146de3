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
 * What a key's last counted request left of its budget: an answer that counts nothing (a
 * placement refused before the key is read) carries it, as it stands (`budgetStanding`).
 */
export interface BudgetSeen {
  limit: number;
  remaining: number;
  /** Unix seconds when the window it was counted in resets. */
  resetAt: number;
  windowSeconds: number;
}

/** A budget as last counted, as it stands at `now`: once its window has reset, the whole limit. */
export function budgetStanding(seen: BudgetSeen, now = Date.now()): { remaining: number; resetAt: number } {
  if (now < seen.resetAt * 1000) return { remaining: seen.remaining, resetAt: seen.resetAt };
  const { remaining, resetAt } = rateLimitResult(0, seen.limit, rateWindow(seen.windowSeconds, now));
  return { remaining, resetAt };
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
