import { Migration } from '@mikro-orm/migrations';

/**
 * Where the reconciler's ledger check of each account last found it adding up: the ledger row it
 * had read through and that row's balanceAfter, so the next run reads only the rows after it, and
 * when the account was last checked from its first row (a full check, which also sees a row changed
 * after it was checked). Only the reconciler writes it; losing it costs one full check. No foreign
 * key: its check would take a share lock on the account row, which the money path locks for update,
 * and accounts are never deleted.
 */
export class Migration20261217000000LedgerCheckpoints extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "ledger_checkpoints" (
      "account_id" uuid primary key,
      "through_id" bigint not null,
      "through_balance" numeric(18,2) not null,
      "full_at" timestamptz not null,
      "checked_at" timestamptz not null default now());`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "ledger_checkpoints";');
  }
}
