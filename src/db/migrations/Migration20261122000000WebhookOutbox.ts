import { Migration } from '@mikro-orm/migrations';

/**
 * The webhook outbox dispatcher's bookkeeping: `events.dispatched_at` marks an event whose
 * delivery was decided (a webhook_deliveries row, or none when no webhook was configured), so the
 * dispatcher's sweep reads only a small partial index instead of anti-joining every event.
 * Events written before this migration predate webhook delivery and count as dispatched.
 */
export class Migration20261122000000WebhookOutbox extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table "events" add column "dispatched_at" timestamptz null;');
    this.addSql('update "events" set "dispatched_at" = "created_at";');
    this.addSql(
      'create index "events_undispatched_index" on "events" ("created_at", "id") where "dispatched_at" is null;',
    );
    this.addSql(
      'create index "webhook_deliveries_pending_index" on "webhook_deliveries" ("next_attempt_at") where "status" = \'pending\';',
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists "webhook_deliveries_pending_index";');
    this.addSql('drop index if exists "events_undispatched_index";');
    this.addSql('alter table "events" drop column if exists "dispatched_at";');
  }
}
