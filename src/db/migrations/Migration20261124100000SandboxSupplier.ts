import { Migration } from '@mikro-orm/migrations';

/**
 * The built-in sandbox gift-card supplier remembers each purchase by its idempotency key here, as
 * a real supplier would on its side: a repeated call returns the same codes and buys nothing more.
 */
export class Migration20261124100000SandboxSupplier extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "sandbox_supplier_orders" (
      "idempotency_key" varchar(255) not null primary key,
      "product_id" varchar(255) not null,
      "requested" int not null,
      "codes" jsonb not null,
      "created_at" timestamptz not null default now());`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "sandbox_supplier_orders";');
  }
}
