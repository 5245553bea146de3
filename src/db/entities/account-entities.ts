import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAt, money, timestamp } from './entity-columns';

// An account (its balance and level), its API keys (names, rotation, last use) and the people who
// sign in to the account area.

export interface Account {
  id: string;
  name: string;
  level: number & Opt;
  cumulativeSpending: string & Opt;
  balance: string & Opt;
  createdAt: Date & Opt;
}
export const AccountSchema = new EntitySchema<Account>({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: { type: 'uuid', primary: true },
    name: { type: 'string' },
    level: { type: 'integer', default: 1 },
    cumulativeSpending: { ...money, default: 0 },
    balance: { ...money, default: 0 },
    createdAt,
  },
});

export interface ApiKey {
  id: string;
  accountId: string;
  /** Shown in lists: `wsk_` and the first characters of the key. */
  prefix: string;
  /** The key's last four characters, shown with the prefix (null for keys made before they were kept). */
  lastFour?: string | null;
  keyHash: string;
  /** A reseller's label; keys made by the CLI have none. */
  name?: string | null;
  createdAt: Date & Opt;
  /** Updated at most once a minute per key, so an API call does not write a row each time. */
  lastUsedAt?: Date | null;
  revokedAt?: Date | null;
  /** Set when the key is rotated: it keeps working until then (the grace period). */
  expiresAt?: Date | null;
  /** The key that replaced this one on rotation. */
  replacedBy?: string | null;
  /** The scopes it was made with; null: every scope. */
  scopes?: string[] | null;
  /** The networks it may be used from; null: anywhere. */
  allowedCidrs?: string[] | null;
  /** The end of its life its owner chose: past it, requests are refused as `key_expired`. */
  validUntil?: Date | null;
}
export const ApiKeySchema = new EntitySchema<ApiKey>({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid', index: true },
    prefix: { type: 'string', length: 32 },
    lastFour: { type: 'string', length: 4, nullable: true },
    keyHash: { type: 'string', length: 64, unique: true },
    name: { type: 'string', length: 64, nullable: true },
    createdAt,
    lastUsedAt: { ...timestamp, nullable: true },
    revokedAt: { ...timestamp, nullable: true },
    expiresAt: { ...timestamp, nullable: true },
    replacedBy: { type: 'uuid', nullable: true },
    scopes: { type: 'string[]', columnType: 'text[]', nullable: true },
    allowedCidrs: { type: 'string[]', columnType: 'text[]', nullable: true },
    validUntil: { ...timestamp, nullable: true },
  },
});

/** A person who signs in to the account area: one per account, by email and password. */
export interface User {
  id: string;
  accountId: string;
  /** Trimmed and lower-cased. */
  email: string;
  /** `scrypt$N$r$p$salt$hash` (src/services/accounts/passwords.ts); the password itself is never stored. */
  passwordHash: string;
  createdAt: Date & Opt;
  lastSignInAt?: Date | null;
}
export const UserSchema = new EntitySchema<User>({
  name: 'User',
  tableName: 'users',
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid', unique: true },
    email: { type: 'string', length: 254, unique: true },
    passwordHash: { type: 'string', length: 255 },
    createdAt,
    lastSignInAt: { ...timestamp, nullable: true },
  },
});
