import type { EntityManager } from '@mikro-orm/postgresql';

// Worker heartbeats: a row per worker process whose Temporal worker runs, its time from the
// database's clock (so no process's clock matters), written with asynchronous commit (a beat lost
// to a crash is only a beat).

export async function beatWorker(
  em: EntityManager,
  beat: { id: string; taskQueue: string; scheduleToStartMs: number | null },
): Promise<void> {
  await em.execute(
    `insert into worker_heartbeats (id, task_queue, beat_at, wft_schedule_to_start_ms)
     select ?, ?, now(), ?::int from (select set_config('synchronous_commit', 'off', true)) async_commit
     on conflict (id) do update set beat_at = now(), wft_schedule_to_start_ms = excluded.wft_schedule_to_start_ms`,
    [beat.id, beat.taskQueue, beat.scheduleToStartMs == null ? null : Math.round(beat.scheduleToStartMs)],
  );
}

export async function forgetWorker(em: EntityManager, id: string): Promise<void> {
  await em.execute('delete from worker_heartbeats where id = ?', [id]);
}

/** Rows of processes gone for an hour (killed, never stopped): nobody reads them. */
export async function pruneWorkerHeartbeats(em: EntityManager): Promise<void> {
  await em.execute(`delete from worker_heartbeats where beat_at < now() - interval '1 hour'`);
}

/**
 * The workers of a task queue that beat within `freshMs`, and the longest workflow-task
 * schedule-to-start any of them reported (null: none reported one).
 */
export async function liveWorkers(
  em: EntityManager,
  taskQueue: string,
  freshMs: number,
): Promise<{ live: number; scheduleToStartMs: number | null }> {
  const [row] = await em.execute<{ live: string; queue_ms: number | null }[]>(
    `select count(*) as live, max(wft_schedule_to_start_ms) as queue_ms
       from worker_heartbeats where task_queue = ? and beat_at > now() - make_interval(secs => ?)`,
    [taskQueue, freshMs / 1000],
  );
  return { live: Number(row.live), scheduleToStartMs: row.queue_ms == null ? null : Number(row.queue_ms) };
}
