import { Migration } from '@mikro-orm/migrations';

/**
 * The reconciler: what it did, one row per repair (a workflow restarted for a row
 * Temporal had lost), per give-up and per ledger alert. `observed` is what a repair answered (the
 * closed run it replaced, or `missing`), unique per subject, so two reconcilers seeing the same
 * orphan repair it once; an account's ledger alert stays open (one per account) until its ledger
 * adds up again. The partial indexes keep the keyset pages on the few non-final rows instead of
 * whole tables.
 */
export class Migration20261205000000Reconciler extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "reconciler_repairs" (
      "id" bigserial primary key,
      "kind" varchar(32) not null,
      "subject_id" varchar(255) not null,
      "observed" varchar(255) not null,
      "action" varchar(16) not null,
      "workflow_id" varchar(255) null,
      "detail" jsonb not null default '{}',
      "created_at" timestamptz not null default now(),
      "resolved_at" timestamptz null,
      constraint "reconciler_repairs_once" unique ("kind", "subject_id", "observed"));`);
    this.addSql('create index "reconciler_repairs_created_at_index" on "reconciler_repairs" ("created_at", "id");');
    // One open alert per account whose ledger does not add up, until it adds up again.
    this.addSql(
      `create unique index "reconciler_ledger_open_unique" on "reconciler_repairs" ("subject_id") where "kind" = 'ledger' and "resolved_at" is null;`,
    );
    this.addSql(`create index "orders_unsettled_id_index" on "orders" ("id") where "status" in ('pending', 'paid');`);
    this.addSql(
      `create index "redemptions_open_id_index" on "redemptions" ("id") where "status" in ('pending', 'processing');`,
    );
    this.addSql(
      `create index "webhook_deliveries_pending_id_index" on "webhook_deliveries" ("id") where "status" = 'pending';`,
    );
    this.addSql(
      `create index "evm_checkouts_open_index" on "evm_checkouts" ("derivation_index") where "state" in ('pending', 'paid');`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists "evm_checkouts_open_index";');
    this.addSql('drop index if exists "webhook_deliveries_pending_id_index";');
    this.addSql('drop index if exists "redemptions_open_id_index";');
    this.addSql('drop index if exists "orders_unsettled_id_index";');
    this.addSql('drop table if exists "reconciler_repairs";');
  }
}
