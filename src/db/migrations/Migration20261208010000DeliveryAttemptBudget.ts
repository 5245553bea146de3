import { Migration } from '@mikro-orm/migrations';

/**
 * A webhook delivery's attempt budget lives with the delivery, not in the run of its workflow,
 * so that attempts never exceed the maximum: `budget_start` is the attempt count when the current budget of
 * WEBHOOK_MAX_ATTEMPTS began (0, or the count at its last manual retry). A run started again for a
 * delivery still pending (the reconciler's, after Temporal lost the first) spends what is left of
 * that budget instead of a fresh one.
 */
export class Migration20261208010000DeliveryAttemptBudget extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table "webhook_deliveries" add column "budget_start" int not null default 0;');
  }

  override async down(): Promise<void> {
    this.addSql('alter table "webhook_deliveries" drop column "budget_start";');
  }
}
