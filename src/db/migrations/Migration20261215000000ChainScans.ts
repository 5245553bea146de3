import { Migration } from '@mikro-orm/migrations';

/**
 * One row per chain for its scanner (workflows/chain-scan-workflow.ts): when it last read the chain
 * for every open checkout at once, for how many, and whether the chain answered. A checkout's watch reads
 * it to say which chains are unavailable; it no longer asks the chain itself. (The checkouts a tick
 * reads for are found by the reconciler's partial index, `evm_checkouts_open_index`.)
 */
export class Migration20261215000000ChainScans extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "evm_chain_scans" (
      "chain_id" integer not null primary key,
      "checkouts" integer not null default 0,
      "available" boolean not null,
      "scanned_at" timestamptz not null default now()
    );`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table "evm_chain_scans";');
  }
}
