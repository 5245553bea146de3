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

/** Counts one hit in a fixed window kept in Postgres, so several API processes share a budget. */
export async function hitRateLimit(em: EntityManager, bucket: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
  const now = Date.now();
  const windowMs = windowSeconds * 1000;
  const windowStart = new Date(Math.floor(now / windowMs) * windowMs);
  const count = await countHit(em, bucket, windowStart);
  if (Math.random() < 0.01) await pruneRateLimits(em);
  const resetAtMs = windowStart.getTime() + windowMs;
  return {
    allowed: count <= limit,
    remaining: Math.max(0, limit - count),
    resetAt: Math.ceil(resetAtMs / 1000),
    retryAfter: Math.max(1, Math.ceil((resetAtMs - now) / 1000)),
    windowStart,
  };
}

/** Gives back a hit counted by hitRateLimit: an attempt that turned out not to count against the budget. */
export async function giveBackHit(em: EntityManager, bucket: string, hit: RateLimitResult): Promise<void> {
  await uncountHit(em, bucket, hit.windowStart);
}
