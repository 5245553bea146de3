import { Migration } from '@mikro-orm/migrations';

/**
 * What each direct-code product costs us: the catalog says which supplier serves a
 * product and under which of the supplier's product ids. The supplier's own settings stay the
 * source its adapter buys from (RELOADLY_PRODUCTS); these columns are written from them at start,
 * so reports and operators read the mapping beside the product. The margin report reads orders by
 * when they were paid, and each one's refunds: hence the two partial indexes.
 */
export class Migration20261207000000SupplierCatalog extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'alter table "products" add column "supplier" varchar(32) null, add column "supplier_product_id" varchar(64) null;',
    );
    this.addSql(
      `create index "orders_purchase_paid_at_index" on "orders" ("paid_at") where "kind" = 'purchase' and "paid_at" is not null;`,
    );
    this.addSql(
      `create index "ledger_transactions_refund_order_index" on "ledger_transactions" ("order_id") where "type" = 'refund';`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists "ledger_transactions_refund_order_index";');
    this.addSql('drop index if exists "orders_purchase_paid_at_index";');
    this.addSql(
      'alter table "products" drop column if exists "supplier", drop column if exists "supplier_product_id";',
    );
  }
}
