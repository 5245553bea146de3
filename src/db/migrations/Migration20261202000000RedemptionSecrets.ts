import { Migration } from '@mikro-orm/migrations';

/**
 * Password fields of a redemption's details wait here, encrypted (AES-256-GCM under the service's
 * key ring), between the submission and the upstream call: the redemption workflow carries only
 * the attempt's id, so they never enter Temporal history. They are deleted when the attempt ends.
 * The upstream's completion note is kept on the attempt (masked when the attempt ends) instead of
 * travelling back through an activity result.
 */
export class Migration20261202000000RedemptionSecrets extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "redemption_secrets" (
      "redemption_id" varchar(255) not null,
      "attempt" int not null,
      "key_id" varchar(64) not null,
      "data" bytea not null,
      "created_at" timestamptz not null default now(),
      constraint "redemption_secrets_pkey" primary key ("redemption_id", "attempt"));`);
    this.addSql('alter table "redemption_attempts" add column "upstream_deliverable" text null;');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "redemption_secrets";');
    this.addSql('alter table "redemption_attempts" drop column "upstream_deliverable";');
  }
}
