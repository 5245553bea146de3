import { Migration } from '@mikro-orm/migrations';

/**
 * The facts that money moves on, so that no Temporal message is believed on its own:
 * `payment_confirmations` holds a hosted checkout's payment as the service itself learnt it (a
 * provider callback whose signature verified, or the provider's own status answer), and
 * `support_requests` holds a support action (who, why, on what) before its workflow is told. The
 * workflow's activity settles or refunds only against such a row, in the same transaction, and
 * marks a support request applied so that it acts once; one the workflow refused is closed, so its
 * message cannot be sent again later.
 */
export class Migration20261210000000MoneyFromFacts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "payment_confirmations" (
      "checkout_id" varchar(255) not null primary key,
      "order_id" varchar(255) not null references "orders" ("id"),
      "source" varchar(16) not null,
      "confirmed_at" timestamptz not null default now(),
      constraint "payment_confirmations_source_check" check ("source" in ('callback', 'status')));`);
    this.addSql('create index "payment_confirmations_order_id_index" on "payment_confirmations" ("order_id");');
    this.addSql(`create table "support_requests" (
      "id" varchar(64) not null primary key,
      "subject_id" varchar(255) not null,
      "action" varchar(32) not null,
      "actor" varchar(255) not null,
      "reason" text not null,
      "batch_id" varchar(64) null,
      "created_at" timestamptz not null default now(),
      "applied_at" timestamptz null,
      "closed_at" timestamptz null);`);
    this.addSql('create index "support_requests_subject_id_index" on "support_requests" ("subject_id");');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "support_requests";');
    this.addSql('drop table if exists "payment_confirmations";');
  }
}
