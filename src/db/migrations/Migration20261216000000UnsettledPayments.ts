import { Migration } from '@mikro-orm/migrations';

/**
 * A confirmed payment that no order or top-up has settled yet is findable: `settled_at` is set in
 * the transaction that settles it, and a partial index holds only the confirmations still without
 * it, so the reconciler's page of them stays as small as the payments in flight, whatever the
 * table's size. An EVM checkout marked paid records its confirmation here too (`chain`), beside
 * its transfers (which remain what it settles on). Confirmations of orders already settled are
 * marked so; one of an expired order is left open, which is what the reconciler looks for.
 */
export class Migration20261216000000UnsettledPayments extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table "payment_confirmations" add column "settled_at" timestamptz null;');
    this.addSql('alter table "payment_confirmations" drop constraint "payment_confirmations_source_check";');
    this.addSql(`alter table "payment_confirmations" add constraint "payment_confirmations_source_check"
      check ("source" in ('callback', 'status', 'chain'));`);
    this.addSql(`insert into "payment_confirmations" ("checkout_id", "order_id", "source", "confirmed_at")
      select c."id", c."reference", 'chain', c."paid_at" from "evm_checkouts" c join "orders" o on o."id" = c."reference"
       where c."paid_at" is not null
      on conflict ("checkout_id") do nothing;`);
    this.addSql(`update "payment_confirmations" p set "settled_at" = p."confirmed_at" from "orders" o
      where o."id" = p."order_id" and o."status" not in ('pending', 'expired');`);
    this.addSql(`create index "payment_confirmations_unsettled_index" on "payment_confirmations" ("order_id")
      where "settled_at" is null;`);
  }

  override async down(): Promise<void> {
    this.addSql('drop index "payment_confirmations_unsettled_index";');
    this.addSql(`delete from "payment_confirmations" where "source" = 'chain';`);
    this.addSql('alter table "payment_confirmations" drop constraint "payment_confirmations_source_check";');
    this.addSql(`alter table "payment_confirmations" add constraint "payment_confirmations_source_check"
      check ("source" in ('callback', 'status'));`);
    this.addSql('alter table "payment_confirmations" drop column "settled_at";');
  }
}
