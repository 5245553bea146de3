import { Migration } from '@mikro-orm/migrations';

/**
 * The operator queue (REDEMPTION_UPSTREAM=operators): one row per redemption attempt
 * submitted to people instead of an automatic upstream. A claim is a holder and an expiry, taken
 * by a conditional update, so one operator works an attempt at a time and an abandoned claim frees
 * itself. The decision (outcome, failure code, whether supplier resources are still held) is kept
 * here first; the redemption workflow is then signalled. Who did what and why goes to
 * support_actions. Redeem details are not copied here: they stay where the submission put them.
 */
export class Migration20261206000000OperatorQueue extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "operator_queue" (
      "redemption_id" varchar(255) not null,
      "attempt" int not null,
      "product_id" varchar(255) not null,
      "queued_at" timestamptz not null default now(),
      "claimed_by" varchar(255) null,
      "claimed_at" timestamptz null,
      "claim_expires_at" timestamptz null,
      "outcome" varchar(16) null,
      "failure_code" varchar(32) null,
      "holds_resources" boolean not null default false,
      "decided_by" varchar(255) null,
      "decided_at" timestamptz null,
      constraint "operator_queue_pkey" primary key ("redemption_id", "attempt"),
      constraint "operator_queue_outcome_check" check ("outcome" is null or "outcome" in ('fulfilled', 'failed')));`);
    this.addSql(
      `create index "operator_queue_waiting_index" on "operator_queue" ("queued_at", "redemption_id") where "outcome" is null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "operator_queue";');
  }
}
