import { Migration } from '@mikro-orm/migrations';

/**
 * Which events an endpoint receives (null: every event but the opt-in ones, what every endpoint
 * received before) and the balance under which it is told `balance.low`. `product_update_marks`
 * holds one row per product changed and not yet announced: its state before the first change, so
 * that changes within the coalescing window become one `product.updated` (or none, when they
 * cancel out). A partial index serves "resend what failed since T".
 */
export class Migration20261212010000EventSubscriptions extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'alter table "webhook_endpoints" add column "events" text[] null, add column "balance_low_threshold" numeric(18,2) null;',
    );
    this.addSql(`create table "product_update_marks" (
      "product_id" varchar(255) not null primary key references "products" ("id"),
      "changed_at" timestamptz not null default now(),
      "before" jsonb not null,
      "changes" int not null default 1);`);
    this.addSql(
      `create index "webhook_deliveries_unsent_index" on "webhook_deliveries" ("account_id", "created_at", "id") where "status" in ('failed', 'cancelled');`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists "webhook_deliveries_unsent_index";');
    this.addSql('drop table if exists "product_update_marks";');
    this.addSql('alter table "webhook_endpoints" drop column "events", drop column "balance_low_threshold";');
  }
}
