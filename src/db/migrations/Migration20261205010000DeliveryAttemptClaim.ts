import { Migration } from '@mikro-orm/migrations';

/**
 * A webhook delivery's attempt is claimed before its POST and closed when its result is recorded:
 * an attempt still open when its activity runs again (the worker died mid-POST,
 * or Postgres failed the recording) is the same attempt, sent again under the same delivery id,
 * not a new one, so `attempts` never counts one POST twice.
 */
export class Migration20261205010000DeliveryAttemptClaim extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table "webhook_deliveries" add column "attempt_open" boolean not null default false;');
  }

  override async down(): Promise<void> {
    this.addSql('alter table "webhook_deliveries" drop column "attempt_open";');
  }
}
