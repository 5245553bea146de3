import { Migration } from '@mikro-orm/migrations';

/**
 * One row per worker process while its Temporal worker runs, beaten every WORKER_HEARTBEAT_MS: how
 * an API process knows, within about a second and across processes, whether any worker polls its
 * task queue, and how long that worker's workflow tasks wait (src/services/worker-heartbeat.ts).
 */
export class Migration20261211000000WorkerHeartbeats extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "worker_heartbeats" (
      "id" varchar(128) not null primary key,
      "task_queue" varchar(255) not null,
      "beat_at" timestamptz not null default now(),
      "started_at" timestamptz not null default now(),
      "wft_schedule_to_start_ms" integer null
    );`);
    this.addSql('create index "worker_heartbeats_task_queue_index" on "worker_heartbeats" ("task_queue");');
  }

  override async down(): Promise<void> {
    this.addSql('drop table "worker_heartbeats";');
  }
}
