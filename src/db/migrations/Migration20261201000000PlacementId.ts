import { Migration } from '@mikro-orm/migrations';

/**
 * The API request that placed an order (or opened a top-up). Retries of one request after a lost
 * reply, and concurrent requests for the same externalOrderId, meet at one order: the request
 * named here is told `reused: false`, every other one `reused: true`.
 */
export class Migration20261201000000PlacementId extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table "orders" add column "placement_id" varchar(64) null;');
  }

  override async down(): Promise<void> {
    this.addSql('alter table "orders" drop column "placement_id";');
  }
}
