import { Migration } from '@mikro-orm/migrations';

/**
 * The self-hosted EVM checkout (PAYMENT_PROVIDER=evm): one deposit address per checkout, derived
 * at an index that a sequence hands out once and a unique constraint keeps from ever being reused;
 * how far each chain was scanned for it; and every token transfer seen, keyed by chain,
 * transaction and log index so that a transfer seen again is the same row and counts once.
 */
export class Migration20261203000000EvmCheckouts extends Migration {
  override async up(): Promise<void> {
    this.addSql('create sequence "evm_derivation_index_seq" as integer minvalue 0 start 0;');
    this.addSql(`create table "evm_checkouts" (
      "id" varchar(64) not null primary key,
      "reference" varchar(255) not null,
      "derivation_index" integer not null,
      "address" varchar(42) not null,
      "amount" numeric(18,2) not null,
      "currency" varchar(8) not null,
      "state" varchar(16) not null default 'pending',
      "paid_at" timestamptz null,
      "closed_at" timestamptz null,
      "created_at" timestamptz not null default now(),
      constraint "evm_checkouts_derivation_index_unique" unique ("derivation_index"),
      constraint "evm_checkouts_address_unique" unique ("address"));`);
    this.addSql('create index "evm_checkouts_reference_index" on "evm_checkouts" ("reference");');
    this.addSql(`create table "evm_checkout_scans" (
      "checkout_id" varchar(64) not null references "evm_checkouts" ("id"),
      "chain_id" integer not null,
      "start_block" bigint not null,
      "scanned_to" bigint not null,
      "head" bigint not null,
      "updated_at" timestamptz not null default now(),
      primary key ("checkout_id", "chain_id"));`);
    this.addSql(`create table "evm_transfers" (
      "id" bigserial primary key,
      "checkout_id" varchar(64) not null references "evm_checkouts" ("id"),
      "chain_id" integer not null,
      "tx_hash" varchar(66) not null,
      "log_index" integer not null,
      "token" varchar(8) not null,
      "units" numeric(78,0) not null,
      "decimals" smallint not null,
      "block_number" bigint not null,
      "block_hash" varchar(66) not null,
      "state" varchar(16) not null default 'seen',
      "applied" varchar(16) null,
      "excess_cents" bigint not null default 0,
      "credit_reason" varchar(32) null,
      "seen_at" timestamptz not null default now(),
      "confirmed_at" timestamptz null,
      constraint "evm_transfers_log_unique" unique ("chain_id", "tx_hash", "log_index"));`);
    this.addSql('create index "evm_transfers_checkout_index" on "evm_transfers" ("checkout_id");');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "evm_transfers";');
    this.addSql('drop table if exists "evm_checkout_scans";');
    this.addSql('drop table if exists "evm_checkouts";');
    this.addSql('drop sequence if exists "evm_derivation_index_seq";');
  }
}
