import { Migration } from '@mikro-orm/migrations';

/**
 * GET /orders pages one account's orders by order_number. Without this index Postgres walked the
 * order_number index backwards and filtered out every other account's rows: measured by
 * bench/lists, one account's first page cost 23 ms with 100k rows of another account in the
 * table (all of them read and thrown away), and grew with the table.
 */
export class Migration20261201010000OrderListIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'create index if not exists "orders_account_id_order_number_index" on "orders" ("account_id", "order_number");',
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists "orders_account_id_order_number_index";');
  }
}
