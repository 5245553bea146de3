import type { EntityManager } from '@mikro-orm/postgresql';

// Fixed-window counters in Postgres, shared by every API process.

/** Counts one hit of `bucket` in the window starting at `windowStart`; returns the window's count. */
export async function countHit(em: EntityManager, bucket: string, windowStart: Date): Promise<number> {
  // A counter tick need not wait for the WAL flush: `synchronous_commit = off` for this
  // statement's own transaction only (set_config's `true`), so a crash loses at most a few ticks.
  // Ledger and order writes keep the server's synchronous commit; inside a caller's transaction
  // (none today) the setting would cover it too, so there the tick commits as usual.
  const commitMode = em.isInTransaction()
    ? ''
    : `from (select set_config('synchronous_commit', 'off', true)) async_commit`;
  const rows = await em.execute<{ count: number }[]>(
    `insert into rate_limits (bucket, window_start, count)
     select ?::text, ?::timestamptz, 1 ${commitMode}
     on conflict (bucket, window_start) do update set count = rate_limits.count + 1
     returning count`,
    [bucket, windowStart],
  );
  return Number(rows[0].count);
}

/**
 * `countHit` as a part of a larger statement: one hit, in the window starting at the next
 * parameter, of the bucket `bucketSql` (an SQL expression over the row of `source`) for each row of
 * `source`, with the same asynchronous commit; returns `count`. For a caller that counts a request
 * in the statement that reads what the request needs.
 */
export function hitCounterSql(source: string, bucketSql: string): string {
  return `insert into rate_limits (bucket, window_start, count)
          select ${bucketSql}, ?::timestamptz, 1 from ${source}, (select set_config('synchronous_commit', 'off', true)) async_commit
          on conflict (bucket, window_start) do update set count = rate_limits.count + 1
          returning count`;
}

/** Drops windows that ended long ago. */
export async function pruneRateLimits(em: EntityManager): Promise<void> {
  await em.execute(`delete from rate_limits where window_start < now() - interval '2 hours'`);
}

/** Takes back one hit of `bucket` in the window starting at `windowStart` (never below zero). */
export async function uncountHit(em: EntityManager, bucket: string, windowStart: Date): Promise<void> {
  await em.execute('update rate_limits set count = count - 1 where bucket = ? and window_start = ? and count > 0', [
    bucket,
    windowStart,
  ]);
}
