import { Migration } from '@mikro-orm/migrations';

/** The built-in sandbox payment provider keeps its hosted checkouts here (a real provider would not). */
export class Migration20261123000000SandboxCheckouts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "sandbox_checkouts" (
      "id" varchar(64) not null primary key,
      "reference" varchar(255) not null,
      "amount" numeric(18,2) not null,
      "currency" varchar(8) not null,
      "description" text not null,
      "callback_url" text not null,
      "status" varchar(16) not null default 'pending',
      "paid_at" timestamptz null,
      "created_at" timestamptz not null default now());`);
    this.addSql('create index "sandbox_checkouts_reference_index" on "sandbox_checkouts" ("reference");');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "sandbox_checkouts";');
  }
}
