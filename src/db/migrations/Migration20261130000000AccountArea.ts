import { Migration } from '@mikro-orm/migrations';

/**
 * The reseller account area: named API keys with their last four characters, last use and a
 * rotation grace period; users who sign in with email and password (one per account); and the
 * session store of express-session (connect-pg-simple's table layout, with a timezone-aware
 * expiry).
 */
export class Migration20261130000000AccountArea extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "api_keys"
      add column "name" varchar(64) null,
      add column "last_four" varchar(4) null,
      add column "last_used_at" timestamptz null,
      add column "expires_at" timestamptz null,
      add column "replaced_by" uuid null;`);
    this.addSql(`create table "users" (
      "id" uuid not null primary key,
      "account_id" uuid not null references "accounts" ("id"),
      "email" varchar(254) not null,
      "password_hash" varchar(255) not null,
      "created_at" timestamptz not null default now(),
      "last_sign_in_at" timestamptz null,
      constraint "users_account_id_unique" unique ("account_id"),
      constraint "users_email_unique" unique ("email"));`);
    this.addSql(`create table "account_sessions" (
      "sid" varchar(255) not null primary key,
      "sess" json not null,
      "expire" timestamptz not null);`);
    this.addSql('create index "account_sessions_expire_index" on "account_sessions" ("expire");');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "account_sessions";');
    this.addSql('drop table if exists "users";');
    this.addSql(`alter table "api_keys" drop column "name", drop column "last_four", drop column "last_used_at",
      drop column "expires_at", drop column "replaced_by";`);
  }
}
