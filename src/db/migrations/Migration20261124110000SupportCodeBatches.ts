import { Migration } from '@mikro-orm/migrations';

/**
 * Codes that support obtained by hand wait here for the procurement workflow's deliver step, so
 * the workflow is sent only the batch id: gift card codes never enter Temporal's history (which
 * ops browse in the Temporal UI). A batch is deleted once delivered or refused.
 */
export class Migration20261124110000SupportCodeBatches extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "support_code_batches" (
      "id" varchar(64) not null primary key,
      "order_id" varchar(255) not null,
      "codes" jsonb not null,
      "created_at" timestamptz not null default now());`);
    this.addSql('create index "support_code_batches_order_id_index" on "support_code_batches" ("order_id");');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "support_code_batches";');
  }
}
