import { Migration } from '@mikro-orm/migrations';

/**
 * What a key may do and where from: its scopes (null: every scope, as every key made before could
 * do everything), the CIDRs it may be used from (null: anywhere) and the end of its life its owner
 * chose. That end is apart from `expires_at`, which a rotation sets: a rotated key past its grace
 * period is gone (401), a key past the end its owner chose is refused as expired (403).
 */
export class Migration20261212000000ScopedKeys extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'alter table "api_keys" add column "scopes" text[] null, add column "allowed_cidrs" text[] null, add column "valid_until" timestamptz null;',
    );
  }

  override async down(): Promise<void> {
    this.addSql('alter table "api_keys" drop column "scopes", drop column "allowed_cidrs", drop column "valid_until";');
  }
}
