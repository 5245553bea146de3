import { Migration } from '@mikro-orm/migrations';

/**
 * CSV exports and order batches. An export's file lives here, in pages of CSV text written by its
 * workflow (Postgres is the service's only store), and is deleted when its link expires. A batch's
 * lines are stored as they were posted, each with its outcome once placed. The ledger gets an index
 * by time, so an export finds the ids of a date range without reading the account's whole ledger
 * (orders already have one: orders_account_id_created_at_id_index).
 */
export class Migration20261213000000ExportsAndBatches extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "exports" (
      "id" varchar(64) not null, "account_id" uuid not null, "external_export_id" varchar(64) not null,
      "kind" varchar(16) not null, "range_from" timestamptz not null, "range_to" timestamptz not null,
      "status" varchar(16) not null default 'running',
      "first_key" bigint null, "last_key" bigint null, "total_rows" int not null,
      "cursor" bigint null, "rows" int not null default 0, "pages" int not null default 0, "bytes" bigint not null default 0,
      "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(),
      "ready_at" timestamptz null, "expires_at" timestamptz null,
      constraint "exports_pkey" primary key ("id"),
      constraint "exports_account_fk" foreign key ("account_id") references "accounts" ("id"),
      constraint "exports_kind_check" check ("kind" in ('orders', 'ledger')),
      constraint "exports_status_check" check ("status" in ('running', 'ready', 'expired')));`);
    this.addSql(
      'create unique index "exports_account_external_id_unique" on "exports" ("account_id", "external_export_id");',
    );
    this.addSql('create index "exports_account_created_index" on "exports" ("account_id", "created_at");');
    // The reconciler's page: exports still being written, or ready with their file past its link's life.
    this.addSql(`create index "exports_unsettled_index" on "exports" ("id") where "status" <> 'expired';`);
    this.addSql(`create table "export_pages" (
      "export_id" varchar(64) not null, "page" int not null, "rows" int not null, "content" text not null,
      constraint "export_pages_pkey" primary key ("export_id", "page"),
      constraint "export_pages_export_fk" foreign key ("export_id") references "exports" ("id") on delete cascade);`);
    this.addSql(
      'create index "ledger_transactions_account_created_index" on "ledger_transactions" ("account_id", "created_at", "id");',
    );

    this.addSql(`create table "batches" (
      "id" varchar(64) not null, "account_id" uuid not null, "external_batch_id" varchar(64) not null,
      "lines_hash" varchar(64) not null, "total" int not null, "status" varchar(16) not null default 'running',
      "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), "completed_at" timestamptz null,
      constraint "batches_pkey" primary key ("id"),
      constraint "batches_account_fk" foreign key ("account_id") references "accounts" ("id"),
      constraint "batches_status_check" check ("status" in ('running', 'completed')));`);
    this.addSql(
      'create unique index "batches_account_external_id_unique" on "batches" ("account_id", "external_batch_id");',
    );
    this.addSql('create index "batches_account_created_index" on "batches" ("account_id", "created_at");');
    this.addSql(`create index "batches_running_index" on "batches" ("id") where "status" = 'running';`);
    this.addSql(`create table "batch_lines" (
      "batch_id" varchar(64) not null, "line" int not null,
      "external_order_id" varchar(64) not null, "product_id" varchar(128) not null, "qty" int not null, "expected_unit_price" varchar(32) null,
      "status" varchar(16) not null default 'pending', "order_id" varchar(255) null, "reused" boolean null,
      "error_code" varchar(48) null, "error_message" text null, "error_details" jsonb null, "decided_at" timestamptz null,
      constraint "batch_lines_pkey" primary key ("batch_id", "line"),
      constraint "batch_lines_batch_fk" foreign key ("batch_id") references "batches" ("id"),
      constraint "batch_lines_status_check" check ("status" in ('pending', 'placed', 'rejected')));`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "batch_lines";');
    this.addSql('drop table if exists "batches";');
    this.addSql('drop index if exists "ledger_transactions_account_created_index";');
    this.addSql('drop table if exists "export_pages";');
    this.addSql('drop table if exists "exports";');
  }
}
