import { Migration } from '@mikro-orm/migrations';

/**
 * What each direct-code order bought from a real supplier: one row per purchase (our idempotency
 * key, sent as the supplier's own identifier), with the supplier's transaction id, what it cost
 * us and in which currency. An `open` purchase may still exist at the supplier (processing, or its
 * answer was lost): procurement asks again under its key before it ever buys under a new one.
 */
export class Migration20261204000000SupplierPurchases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "supplier_purchases" (
      "id" bigserial primary key,
      "order_id" varchar(255) not null references "orders" ("id"),
      "idempotency_key" varchar(255) not null,
      "supplier" varchar(32) not null,
      "supplier_product_id" varchar(64) null,
      "state" varchar(16) not null,
      "transaction_id" varchar(64) null,
      "supplier_status" varchar(32) null,
      "requested" int not null,
      "quantity" int null,
      "units" int not null default 0,
      "unit_cost" numeric(24,6) null,
      "total_cost" numeric(24,6) null,
      "currency" varchar(8) null,
      "face_value" numeric(18,2) null,
      "face_currency" varchar(8) null,
      "error" text null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now(),
      constraint "supplier_purchases_idempotency_key_unique" unique ("idempotency_key"),
      constraint "supplier_purchases_state_check" check ("state" in ('open', 'completed', 'failed', 'refused')));`);
    this.addSql('create index "supplier_purchases_order_id_index" on "supplier_purchases" ("order_id", "id");');
    this.addSql(
      `create unique index "supplier_purchases_transaction_unique" on "supplier_purchases" ("supplier", "transaction_id") where "transaction_id" is not null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "supplier_purchases";');
  }
}
