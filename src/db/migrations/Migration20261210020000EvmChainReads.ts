import { Migration } from '@mikro-orm/migrations';

/**
 * What a checkout's scans of a chain keep besides how far they read: how far the rescan before
 * closing has read the address again from its start block (a rescan cut short goes on from there),
 * and, on a chain read by finality, the node's finalized block at the last scan (the depth a
 * transfer's page shows it waiting for).
 */
export class Migration20261210020000EvmChainReads extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'alter table "evm_checkout_scans" add column "rescanned_to" bigint null, add column "finalized" bigint null;',
    );
  }

  override async down(): Promise<void> {
    this.addSql('alter table "evm_checkout_scans" drop column "rescanned_to", drop column "finalized";');
  }
}
