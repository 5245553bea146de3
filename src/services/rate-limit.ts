import type { EntityManager } from '@mikro-orm/postgresql';

export interface RateLimitResult {
  allowed: boolean;
  remaining: number;
  /** Unix seconds when the window resets. */
  resetAt: number;
  retryAfter: number;
}

/** Counts one hit in a fixed window kept in Postgres, so several API processes share a budget. */
export async function hitRateLimit(em: EntityManager, bucket: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
  const now = Date.now();
  const windowMs = windowSeconds * 1000;
  const windowStart = new Date(Math.floor(now / windowMs) * windowMs);
  // A counter tick need not wait for the WAL flush: `synchronous_commit = off` for this
  // statement's own transaction only (set_config's `true`), so a crash loses at most a few ticks.
  // Ledger and order writes keep the server's synchronous commit; inside a caller's transaction
  // (none today) the setting would cover it too, so there the tick commits as usual.
  const commitMode = em.isInTransaction() ? '' : `from (select set_config('synchronous_commit', 'off', true)) async_commit`;
  const rows = await em.execute<{ count: number }[]>(
    `insert into rate_limits (bucket, window_start, count)
     select ?::text, ?::timestamptz, 1 ${commitMode}
     on conflict (bucket, window_start) do update set count = rate_limits.count + 1
     returning count`,
    [bucket, windowStart],
  );
  if (Math.random() < 0.01) {
    await em.execute(`delete from rate_limits where window_start < now() - interval '2 hours'`);
  }
  const count = Number(rows[0].count);
  const resetAtMs = windowStart.getTime() + windowMs;
  return {
    allowed: count <= limit,
    remaining: Math.max(0, limit - count),
    resetAt: Math.ceil(resetAtMs / 1000),
    retryAfter: Math.max(1, Math.ceil((resetAtMs - now) / 1000)),
  };
}
