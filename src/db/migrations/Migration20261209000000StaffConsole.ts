import { Migration } from '@mikro-orm/migrations';

/**
 * The staff console: people who work support, apart from resellers' users. A staff
 * member is invited (a one-time setup token, stored as its SHA-256) and sets a password and a
 * TOTP second factor; the TOTP secret is sealed with TEMPORAL_PAYLOAD_KEYS (it must be read back
 * to check a code, so it cannot be hashed), and the last accepted time step is kept so a code is
 * accepted once. Recovery codes are stored hashed and spent once. Console sessions have their own
 * store, so a reseller's session id never resolves here.
 *
 * The audit log is append-only: one row per console or admin-API action written before the action
 * runs, and its outcome appended in a second table once known. Triggers refuse UPDATE, DELETE and
 * TRUNCATE on both, so neither the console nor any code path can rewrite what was done.
 */
export class Migration20261209000000StaffConsole extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "staff" (
      "id" uuid not null primary key,
      "email" varchar(254) not null,
      "name" varchar(255) not null,
      "role" varchar(16) not null,
      "password_hash" varchar(255) null,
      "totp_key_id" varchar(64) not null,
      "totp_secret" bytea not null,
      "totp_last_step" bigint null,
      "setup_token_hash" varchar(64) null,
      "setup_expires_at" timestamptz null,
      "enrolled_at" timestamptz null,
      "disabled_at" timestamptz null,
      "created_by" varchar(255) not null,
      "created_at" timestamptz not null default now(),
      "last_sign_in_at" timestamptz null,
      constraint "staff_email_unique" unique ("email"),
      constraint "staff_setup_token_unique" unique ("setup_token_hash"),
      constraint "staff_role_check" check ("role" in ('viewer', 'support', 'admin')));`);
    this.addSql(`create table "staff_recovery_codes" (
      "staff_id" uuid not null references "staff" ("id"),
      "code_hash" varchar(64) not null,
      "used_at" timestamptz null,
      constraint "staff_recovery_codes_pkey" primary key ("staff_id", "code_hash"));`);
    this.addSql(`create table "staff_sessions" (
      "sid" varchar(255) not null primary key,
      "sess" json not null,
      "expire" timestamptz not null);`);
    this.addSql('create index "staff_sessions_expire_index" on "staff_sessions" ("expire");');

    this.addSql(`create table "audit_log" (
      "id" bigserial primary key,
      "at" timestamptz not null default now(),
      "actor" varchar(255) not null,
      "actor_email" varchar(254) null,
      "staff_id" uuid null,
      "role" varchar(16) not null,
      "action" varchar(64) not null,
      "subject_id" varchar(255) null,
      "account_id" varchar(64) null,
      "reason" text null,
      "request_id" varchar(64) null,
      "details" jsonb not null default '{}');`);
    this.addSql('create index "audit_log_at_index" on "audit_log" ("id" desc);');
    this.addSql('create index "audit_log_subject_index" on "audit_log" ("subject_id");');
    this.addSql('create index "audit_log_account_index" on "audit_log" ("account_id");');
    this.addSql('create index "audit_log_actor_index" on "audit_log" ("actor");');
    this.addSql(`create table "audit_outcomes" (
      "audit_id" bigint not null primary key references "audit_log" ("id"),
      "outcome" varchar(64) not null,
      "at" timestamptz not null default now());`);
    this.addSql(`create function "audit_append_only"() returns trigger language plpgsql as $$
      begin
        raise exception 'the audit log is append-only: % on % is refused', tg_op, tg_table_name using errcode = '42501';
      end $$;`);
    for (const table of ['audit_log', 'audit_outcomes']) {
      this.addSql(
        `create trigger "${table}_no_rewrite" before update or delete on "${table}" for each row execute function "audit_append_only"();`,
      );
      this.addSql(
        `create trigger "${table}_no_truncate" before truncate on "${table}" for each statement execute function "audit_append_only"();`,
      );
    }
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists "audit_outcomes";');
    this.addSql('drop table if exists "audit_log";');
    this.addSql('drop function if exists "audit_append_only"();');
    this.addSql('drop table if exists "staff_sessions";');
    this.addSql('drop table if exists "staff_recovery_codes";');
    this.addSql('drop table if exists "staff";');
  }
}
