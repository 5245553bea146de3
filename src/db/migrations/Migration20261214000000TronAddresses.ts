import { Migration } from '@mikro-orm/migrations';

/**
 * A checkout's TRON deposit address (hex, the 20 bytes java-tron's log filters take; shown as T…),
 * derived from TRON_XPUB at the checkout's derivation index when EVM_CHAINS has a TRON chain. A
 * checkout opened before then has none: its page never offered TRON, and TRON is not read for it.
 */
export class Migration20261214000000TronAddresses extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table "evm_checkouts" add column "tron_address" varchar(42) null;');
    this.addSql(
      'alter table "evm_checkouts" add constraint "evm_checkouts_tron_address_unique" unique ("tron_address");',
    );
  }

  override async down(): Promise<void> {
    this.addSql('alter table "evm_checkouts" drop column "tron_address";');
  }
}
