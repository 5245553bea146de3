import { Migration } from '@mikro-orm/migrations';

/** The whole data model of spec 1.4.0: accounts, keys, catalog, stock, orders, codes, redemptions,
 * ledger, webhooks, events, rate limits and support actions. */
export class Migration20261121000000Initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'create table "accounts" ("id" uuid not null, "name" varchar(255) not null, "level" int not null default 1, "cumulative_spending" numeric(18,2) not null default 0, "balance" numeric(18,2) not null default 0, "created_at" timestamptz not null default now(), constraint "accounts_pkey" primary key ("id"));',
    );
    this.addSql(
      'create table "api_keys" ("id" uuid not null, "account_id" uuid not null, "prefix" varchar(32) not null, "key_hash" varchar(64) not null, "created_at" timestamptz not null default now(), "revoked_at" timestamptz null, constraint "api_keys_pkey" primary key ("id"));',
    );
    this.addSql('create index "api_keys_account_id_index" on "api_keys" ("account_id");');
    this.addSql('alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");');
    this.addSql(
      'create table "events" ("id" varchar(255) not null, "account_id" uuid not null, "type" varchar(48) not null, "payload" jsonb not null, "created_at" timestamptz not null default now(), constraint "events_pkey" primary key ("id"));',
    );
    this.addSql('create index "events_account_id_created_at_index" on "events" ("account_id", "created_at");');
    this.addSql(
      'create table "issued_codes" ("id" bigserial primary key, "order_id" varchar(255) not null, "account_id" uuid not null, "product_id" varchar(255) not null, "code" varchar(255) not null, "kind" varchar(16) not null, "is_test" boolean not null, "voided" boolean not null default false, "created_at" timestamptz not null default now());',
    );
    this.addSql('create index "issued_codes_order_id_index" on "issued_codes" ("order_id");');
    this.addSql('create index "issued_codes_account_id_index" on "issued_codes" ("account_id");');
    this.addSql('alter table "issued_codes" add constraint "issued_codes_code_unique" unique ("code");');
    this.addSql(
      'create table "ledger_transactions" ("id" bigserial primary key, "account_id" uuid not null, "type" varchar(16) not null, "amount" numeric(18,2) not null, "balance_after" numeric(18,2) not null, "order_id" varchar(255) null, "idempotency_key" varchar(255) not null, "note" text null, "created_at" timestamptz not null default now());',
    );
    this.addSql(
      'alter table "ledger_transactions" add constraint "ledger_transactions_idempotency_key_unique" unique ("idempotency_key");',
    );
    this.addSql(
      'create index "ledger_transactions_account_id_id_index" on "ledger_transactions" ("account_id", "id");',
    );
    this.addSql(
      'create table "orders" ("id" varchar(255) not null, "account_id" uuid not null, "order_number" bigserial, "kind" varchar(16) not null, "channel" varchar(16) not null, "source" varchar(16) not null, "external_order_id" varchar(64) null, "external_topup_id" varchar(64) null, "product_id" varchar(255) null, "qty" int not null, "unit_price" numeric(18,2) not null, "amount" numeric(18,2) not null, "currency" varchar(8) not null, "payment" varchar(16) not null, "status" varchar(16) not null, "delivery_type" varchar(16) null, "fulfillment_status" varchar(24) null, "fulfilled_quantity" int not null default 0, "error_code" varchar(255) null, "resolution" varchar(255) null, "checkout_id" varchar(255) null, "checkout_url" text null, "idempotency_warning" boolean not null default false, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), "paid_at" timestamptz null, "delivered_at" timestamptz null, "expires_at" timestamptz null, constraint "orders_pkey" primary key ("id"));',
    );
    this.addSql('alter table "orders" add constraint "orders_order_number_unique" unique ("order_number");');
    this.addSql('alter table "orders" add constraint "orders_checkout_id_unique" unique ("checkout_id");');
    this.addSql('create index "orders_account_id_created_at_id_index" on "orders" ("account_id", "created_at", "id");');
    this.addSql(
      'create table "products" ("id" varchar(255) not null, "slug" varchar(255) not null, "name" varchar(255) not null, "name_en" varchar(255) null, "currency" varchar(8) not null, "fulfillment_mode" varchar(16) not null, "delivery_type" varchar(16) not null, "product_group_id" varchar(255) null, "denomination" varchar(255) null, "face_currency" varchar(255) null, "region" varchar(255) null, "in_stock" boolean not null, "stock_mode" varchar(16) not null, "limited_remaining" int null, "availability_status" varchar(16) not null, "delivery_mode" varchar(24) not null, "redeem_fields" jsonb not null, "redeem_fields_en" jsonb not null, "listed" boolean not null, "active" boolean not null, "is_test" boolean not null, "sort_order" int not null, "created_at" timestamptz not null default now(), constraint "products_pkey" primary key ("id"));',
    );
    this.addSql('create index "products_product_group_id_index" on "products" ("product_group_id");');
    this.addSql(
      'create table "product_prices" ("product_id" varchar(255) not null, "level" int not null, "price" numeric(18,2) not null, constraint "product_prices_pkey" primary key ("product_id", "level"));',
    );
    this.addSql(
      'create table "rate_limits" ("bucket" varchar(255) not null, "window_start" timestamptz not null, "count" int not null, constraint "rate_limits_pkey" primary key ("bucket", "window_start"));',
    );
    this.addSql(
      'create table "redemptions" ("id" varchar(255) not null, "code_id" bigint not null, "account_id" uuid not null, "order_id" varchar(255) not null, "source" varchar(8) not null, "attempt" int not null, "status" varchar(16) not null, "failure_code" varchar(255) null, "deliverable" text null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), "fulfilled_at" timestamptz null, constraint "redemptions_pkey" primary key ("id"));',
    );
    this.addSql('alter table "redemptions" add constraint "redemptions_code_id_unique" unique ("code_id");');
    this.addSql('create index "redemptions_account_id_index" on "redemptions" ("account_id");');
    this.addSql(
      'create table "redemption_attempts" ("redemption_id" varchar(255) not null, "attempt" int not null, "status" varchar(16) not null, "redeem_info" jsonb not null, "upstream_ref" varchar(255) null, "holds_resources" boolean not null default false, "failure_code" varchar(255) null, "created_at" timestamptz not null default now(), "finished_at" timestamptz null, constraint "redemption_attempts_pkey" primary key ("redemption_id", "attempt"));',
    );
    this.addSql(
      'create table "stock_codes" ("id" bigserial primary key, "product_id" varchar(255) not null, "code" varchar(255) not null, "order_id" varchar(255) null, "imported_at" timestamptz not null default now(), "sold_at" timestamptz null);',
    );
    this.addSql('create index "stock_codes_product_id_order_id_index" on "stock_codes" ("product_id", "order_id");');
    this.addSql(
      'alter table "stock_codes" add constraint "stock_codes_product_id_code_unique" unique ("product_id", "code");',
    );
    this.addSql(
      'create table "support_actions" ("id" bigserial primary key, "subject_id" varchar(255) not null, "action" varchar(32) not null, "actor" varchar(255) not null, "reason" text not null, "payload" jsonb not null, "created_at" timestamptz not null default now());',
    );
    this.addSql('create index "support_actions_subject_id_index" on "support_actions" ("subject_id");');
    this.addSql(
      'create table "webhook_deliveries" ("id" varchar(255) not null, "event_id" varchar(255) not null, "account_id" uuid not null, "status" varchar(16) not null, "attempts" int not null default 0, "last_status_code" int null, "last_error" text null, "next_attempt_at" timestamptz null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), constraint "webhook_deliveries_pkey" primary key ("id"));',
    );
    this.addSql(
      'alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_unique" unique ("event_id");',
    );
    this.addSql(
      'create index "webhook_deliveries_account_id_created_at_id_index" on "webhook_deliveries" ("account_id", "created_at", "id");',
    );
    this.addSql(
      'create table "webhook_endpoints" ("account_id" uuid not null, "url" text not null, "secret" varchar(255) not null, "version" int not null, "updated_at" timestamptz not null default now(), constraint "webhook_endpoints_pkey" primary key ("account_id"));',
    );
    this.addSql('alter table "accounts" add constraint "accounts_balance_non_negative" check ("balance" >= 0);');
    this.addSql('alter table "accounts" add constraint "accounts_level_range" check ("level" between 1 and 5);');
    this.addSql(
      'alter table "api_keys" add constraint "api_keys_account_fk" foreign key ("account_id") references "accounts" ("id");',
    );
    this.addSql(
      'alter table "product_prices" add constraint "product_prices_product_fk" foreign key ("product_id") references "products" ("id") on delete cascade;',
    );
    this.addSql(
      'alter table "stock_codes" add constraint "stock_codes_product_fk" foreign key ("product_id") references "products" ("id");',
    );
    this.addSql(
      'alter table "orders" add constraint "orders_account_fk" foreign key ("account_id") references "accounts" ("id");',
    );
    this.addSql('alter table "orders" add constraint "orders_qty_range" check ("qty" >= 0);');
    this.addSql('alter table "orders" add constraint "orders_amount_non_negative" check ("amount" >= 0);');
    this.addSql(
      'create unique index "orders_account_external_order_id_unique" on "orders" ("account_id", "external_order_id") where "external_order_id" is not null;',
    );
    this.addSql(
      'create unique index "orders_account_external_topup_id_unique" on "orders" ("account_id", "external_topup_id") where "external_topup_id" is not null;',
    );
    this.addSql('create index "orders_status_kind_index" on "orders" ("kind", "status", "product_id");');
    this.addSql(
      'create index "orders_fulfillment_status_index" on "orders" ("fulfillment_status") where "fulfillment_status" is not null;',
    );
    this.addSql(
      'alter table "issued_codes" add constraint "issued_codes_order_fk" foreign key ("order_id") references "orders" ("id");',
    );
    this.addSql(
      'alter table "ledger_transactions" add constraint "ledger_transactions_account_fk" foreign key ("account_id") references "accounts" ("id");',
    );
    this.addSql(
      'alter table "redemptions" add constraint "redemptions_code_fk" foreign key ("code_id") references "issued_codes" ("id");',
    );
    this.addSql(
      'alter table "redemption_attempts" add constraint "redemption_attempts_redemption_fk" foreign key ("redemption_id") references "redemptions" ("id");',
    );
    this.addSql(
      'alter table "events" add constraint "events_account_fk" foreign key ("account_id") references "accounts" ("id");',
    );
    this.addSql(
      'alter table "webhook_deliveries" add constraint "webhook_deliveries_event_fk" foreign key ("event_id") references "events" ("id");',
    );
    this.addSql(
      'alter table "webhook_endpoints" add constraint "webhook_endpoints_account_fk" foreign key ("account_id") references "accounts" ("id");',
    );
    this.addSql('create index "rate_limits_window_start_index" on "rate_limits" ("window_start");');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "support_actions" cascade;');
    this.addSql('drop table if exists "rate_limits" cascade;');
    this.addSql('drop table if exists "webhook_deliveries" cascade;');
    this.addSql('drop table if exists "webhook_endpoints" cascade;');
    this.addSql('drop table if exists "events" cascade;');
    this.addSql('drop table if exists "redemption_attempts" cascade;');
    this.addSql('drop table if exists "redemptions" cascade;');
    this.addSql('drop table if exists "ledger_transactions" cascade;');
    this.addSql('drop table if exists "issued_codes" cascade;');
    this.addSql('drop table if exists "stock_codes" cascade;');
    this.addSql('drop table if exists "orders" cascade;');
    this.addSql('drop table if exists "product_prices" cascade;');
    this.addSql('drop table if exists "products" cascade;');
    this.addSql('drop table if exists "api_keys" cascade;');
    this.addSql('drop table if exists "accounts" cascade;');
  }
}
