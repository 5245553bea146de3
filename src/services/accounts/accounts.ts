import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  countUsableKeys,
  expireRotatedKey,
  insertKeyRow,
  keyRow,
  lockAccountRow,
  lockUsableKeyRow,
  revokeKeyRow,
  touchKeyLastUsed,
  usableKeyByHash,
  usableKeyRows,
  type KeyHitWindow,
  type KeyRow,
} from '../../db/accounts-store';
import { AccountSchema, type Account } from '../../db/entities/all-entities';
import { ApiError } from '../../domain/errors';
import { KEY_SCOPES, type KeyScope } from '../../domain/key-scopes';
import { NO_LIMITS, type KeyGrant, type KeyLimits } from './key-access';

// Accounts and their API keys. A key is shown once, when it is made; only its SHA-256 is stored,
// with a visible prefix and its last four characters so a reseller can tell keys apart. Every
// check of a key (REST and MCP alike, through `authenticate`) reads the database, so a revoked
// key fails on the very next request, and a rotated one once its grace period ends.

const KEY_PREFIX = 'wsk_';
const SHOWN_PREFIX_LENGTH = 12;

/** More active keys than this on one account is a mistake, not a need. */
export const MAX_ACTIVE_KEYS = 20;

/** The last-used time is written at most this often per key, so API calls stay reads. */
const LAST_USED_RESOLUTION_SECONDS = 60;

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** An account row at Lv1 with a zero balance: the one start for the CLI and for sign-up. */
export async function openAccount(em: EntityManager, name: string): Promise<string> {
  const accountId = randomUUID();
  em.create(AccountSchema, { id: accountId, name });
  await em.flush();
  return accountId;
}

export async function createAccount(em: EntityManager, name: string): Promise<{ accountId: string; apiKey: string }> {
  const accountId = await openAccount(em, name);
  const apiKey = await createApiKey(em, accountId);
  return { accountId, apiKey };
}

/** A key as lists show it: never the key itself. */
export interface KeyView {
  id: string;
  name: string | null;
  /** `wsk_AbCdEfGh…WxYz` (or only the prefix for keys made before the last four were kept). */
  shown: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  /** Set while a rotated key is in its grace period. */
  expiresAt: Date | null;
  /** What it may do: every scope unless it was made with fewer. */
  scopes: KeyScope[];
  /** The networks it may be used from; empty: anywhere. */
  cidrs: string[];
  /** The end of its life its owner chose, if any; `expired` once past it. */
  validUntil: Date | null;
  expired: boolean;
}

const keyView = (r: KeyRow): KeyView => ({
  id: r.id,
  name: r.name,
  shown: r.last_four ? `${r.prefix}…${r.last_four}` : `${r.prefix}…`,
  createdAt: new Date(r.created_at),
  lastUsedAt: r.last_used_at ? new Date(r.last_used_at) : null,
  expiresAt: r.expires_at ? new Date(r.expires_at) : null,
  scopes: r.scopes ? KEY_SCOPES.filter((s) => r.scopes!.includes(s)) : [...KEY_SCOPES],
  cidrs: r.allowed_cidrs ?? [],
  validUntil: r.valid_until ? new Date(r.valid_until) : null,
  expired: r.expired,
});

/** Makes a key and returns it: the only time the plain key exists. */
export async function issueApiKey(
  em: EntityManager,
  accountId: string,
  name: string | null,
  limits: KeyLimits = NO_LIMITS,
): Promise<{ apiKey: string; key: KeyView }> {
  const apiKey = `${KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
  const id = randomUUID();
  await insertKeyRow(em, {
    id,
    accountId,
    name,
    prefix: apiKey.slice(0, SHOWN_PREFIX_LENGTH),
    lastFour: apiKey.slice(-4),
    keyHash: hashApiKey(apiKey),
    ...limits,
  });
  return { apiKey, key: keyView((await keyRow(em, id))!) };
}

/** The CLI's and tests' way to a key: unnamed, no cap. */
export async function createApiKey(
  em: EntityManager,
  accountId: string,
  limits: KeyLimits = NO_LIMITS,
): Promise<string> {
  const account = await em.findOne(AccountSchema, { id: accountId });
  if (!account) throw new Error(`unknown account ${accountId}`);
  return (await issueApiKey(em, accountId, null, limits)).apiKey;
}

/** The account area's "create key": named, and at most MAX_ACTIVE_KEYS usable at once. */
export async function createNamedApiKey(
  em: EntityManager,
  accountId: string,
  name: string,
  limits: KeyLimits = NO_LIMITS,
): Promise<{ apiKey: string; key: KeyView }> {
  return em.transactional(async (tx) => {
    // The account row serializes concurrent creations, so the cap holds.
    await lockAccountRow(tx, accountId);
    if ((await countUsableKeys(tx, accountId)) >= MAX_ACTIVE_KEYS) {
      throw new ApiError(
        'invalid_input',
        `An account can hold at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`,
        { field: 'name' },
      );
    }
    return issueApiKey(tx, accountId, name, limits);
  });
}

/** The account's usable keys (including rotated ones still in their grace period), newest first. */
export async function listApiKeys(em: EntityManager, accountId: string): Promise<KeyView[]> {
  return (await usableKeyRows(em, accountId)).map(keyView);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const keyNotFound = (keyId: string) => new ApiError('not_found', `Key ${keyId} not found`);

/** Locks one of the account's usable keys; another account's key, or a dead one, is not found. */
async function lockUsableKey(
  em: EntityManager,
  accountId: string,
  keyId: string,
): Promise<KeyRow & { replaced_by: string | null }> {
  // Key ids are uuids; anything else names no key (and must not reach a uuid column as text).
  if (!UUID_RE.test(keyId)) throw keyNotFound(keyId);
  const row = await lockUsableKeyRow(em, accountId, keyId);
  if (!row) throw keyNotFound(keyId);
  return row;
}

/** Revokes a key at once: the next request with it is `401 unauthorized`. */
export async function revokeApiKey(em: EntityManager, accountId: string, keyId: string): Promise<KeyView> {
  return em.transactional(async (tx) => {
    const row = await lockUsableKey(tx, accountId, keyId);
    await revokeKeyRow(tx, keyId);
    return keyView(row);
  });
}

/**
 * Rotates a key: a new key with the same name and limits is returned (shown once), and the old one
 * keeps working for `graceSeconds` so clients can switch over, then stops. A key already rotated is
 * refused (its replacement is the one to rotate), and so is an expired one (its replacement would be
 * expired too).
 */
export async function rotateApiKey(
  em: EntityManager,
  accountId: string,
  keyId: string,
  graceSeconds: number,
): Promise<{ apiKey: string; key: KeyView; oldKeyExpiresAt: Date }> {
  return em.transactional(async (tx) => {
    const old = await lockUsableKey(tx, accountId, keyId);
    if (old.replaced_by)
      throw new ApiError('invalid_input', 'This key was already rotated; rotate its replacement instead');
    if (old.expired) throw new ApiError('invalid_input', 'This key has expired; make a new key instead');
    const created = await issueApiKey(tx, accountId, old.name, {
      scopes: old.scopes as KeyScope[] | null,
      cidrs: old.allowed_cidrs,
      validUntil: old.valid_until,
    });
    const expiresAt = await expireRotatedKey(tx, keyId, created.key.id, graceSeconds);
    return { ...created, oldKeyExpiresAt: new Date(expiresAt) };
  });
}

export interface Principal extends KeyGrant {
  account: Account;
  apiKeyId: string;
}

/**
 * Resolves a bearer key to its account, or undefined (unknown, revoked, or past its grace period).
 * With `hit`, the lookup also counts the request in the key's rate-limit window, in the same
 * statement, and `hits` is the window's count with it.
 */
export async function authenticate(em: EntityManager, presented: string): Promise<Principal | undefined>;
export async function authenticate(
  em: EntityManager,
  presented: string,
  hit: KeyHitWindow,
): Promise<(Principal & { hits: number }) | undefined>;
export async function authenticate(
  em: EntityManager,
  presented: string,
  hit?: KeyHitWindow,
): Promise<(Principal & { hits?: number }) | undefined> {
  if (!presented.startsWith(KEY_PREFIX) || presented.length > 200) return undefined;
  const hash = hashApiKey(presented);
  const key = await usableKeyByHash(em, hash, LAST_USED_RESOLUTION_SECONDS, hit);
  // The lookup is by hash; compare again in constant time so no timing reveals a near match.
  if (!key || !timingSafeEqual(Buffer.from(key.key_hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
  const account = em.map(AccountSchema, key.account);
  if (key.stale) await touchKeyLastUsed(em, key.id);
  return {
    account,
    apiKeyId: key.id,
    scopes: key.scopes,
    cidrs: key.cidrs,
    expired: key.expired,
    ...(hit ? { hits: key.hits ?? 0 } : {}),
  };
}
