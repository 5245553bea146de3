import type { EntityManager } from '@mikro-orm/postgresql';
import { hitCounterSql } from './rate-limits-store';

// Reads and writes of accounts and their API keys that the entity API cannot say in one
// statement: row locks, the database clock (`now()`), and the usable-key rule.

export interface KeyRow {
  id: string;
  name: string | null;
  prefix: string;
  last_four: string | null;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  /** Null: every scope. */
  scopes: string[] | null;
  /** Null: from anywhere. */
  allowed_cidrs: string[] | null;
  valid_until: Date | null;
  /** Past `valid_until` by the database's clock. */
  expired: boolean;
}

const KEY_COLUMNS = `id, name, prefix, last_four, created_at, last_used_at, expires_at, scopes, allowed_cidrs, valid_until,
  coalesce(valid_until <= now(), false) as expired`;
/** Usable now: not revoked, and not past the end of a rotation's grace period (by the database's clock). */
const USABLE = 'revoked_at is null and (expires_at is null or expires_at > now())';

/** Locks the account row for the rest of the caller's transaction. */
export async function lockAccountRow(em: EntityManager, accountId: string): Promise<void> {
  await em.execute('select id from accounts where id = ? for update', [accountId]);
}

export async function accountSummaryRow(em: EntityManager, accountId: string) {
  const [row] = await em.execute<{ name: string; balance: string; level: number; cumulative_spending: string }[]>(
    'select name, balance, level, cumulative_spending from accounts where id = ?',
    [accountId],
  );
  return row;
}

export async function keyRow(em: EntityManager, id: string): Promise<KeyRow | undefined> {
  const [row] = await em.execute<KeyRow[]>(`select ${KEY_COLUMNS} from api_keys where id = ?`, [id]);
  return row;
}

export async function countUsableKeys(em: EntityManager, accountId: string): Promise<number> {
  const [{ n }] = await em.execute<{ n: string }[]>(
    `select count(*) as n from api_keys where account_id = ? and ${USABLE}`,
    [accountId],
  );
  return Number(n);
}

/** The account's usable keys, newest first. */
export async function usableKeyRows(em: EntityManager, accountId: string): Promise<KeyRow[]> {
  return em.execute<KeyRow[]>(
    `select ${KEY_COLUMNS} from api_keys where account_id = ? and ${USABLE} order by created_at desc, id`,
    [accountId],
  );
}

/** Locks one of the account's usable keys for the rest of the caller's transaction. */
export async function lockUsableKeyRow(em: EntityManager, accountId: string, keyId: string) {
  const [row] = await em.execute<(KeyRow & { replaced_by: string | null })[]>(
    `select ${KEY_COLUMNS}, replaced_by from api_keys where id = ? and account_id = ? and ${USABLE} for update`,
    [keyId, accountId],
  );
  return row;
}

export async function revokeKeyRow(em: EntityManager, keyId: string): Promise<void> {
  await em.execute('update api_keys set revoked_at = now() where id = ?', [keyId]);
}

/** Ends a rotated key's life `graceSeconds` from now (the database's clock); returns when. */
export async function expireRotatedKey(
  em: EntityManager,
  keyId: string,
  replacedBy: string,
  graceSeconds: number,
): Promise<Date> {
  const [{ expires_at }] = await em.execute<{ expires_at: Date }[]>(
    `update api_keys set expires_at = now() + make_interval(secs => ?), replaced_by = ? where id = ? returning expires_at`,
    [graceSeconds, replacedBy, keyId],
  );
  return expires_at;
}

/** A request counted in its key's fixed window: the bucket is `bucketPrefix` + the key's id. */
export interface KeyHitWindow {
  bucketPrefix: string;
  windowStart: Date;
}

/**
 * The usable key with this hash, its limits and its account's columns, in one statement (the
 * account as `accounts` stores it, for `em.map`); `stale` when its last use was recorded more than
 * `resolutionSeconds` ago, `expired` when it is past the end its owner chose. With `hit`, the same
 * statement counts the request in the key's window (`hits`: the window's count with it), so a
 * request's key check and its rate limit are one round trip; an unknown or dead key counts nothing.
 */
export async function usableKeyByHash(em: EntityManager, hash: string, resolutionSeconds: number, hit?: KeyHitWindow) {
  const [row] = await em.execute<Record<string, unknown>[]>(
    `with k as (select id, account_id, key_hash, (last_used_at is null or last_used_at < now() - make_interval(secs => ?)) as stale,
                       scopes, allowed_cidrs, coalesce(valid_until <= now(), false) as expired
                  from api_keys where key_hash = ? and ${USABLE})
          ${hit ? `, hit as (${hitCounterSql('k', `?::text || k.id::text`)})` : ''}
     select k.id as "k$id", k.key_hash as "k$key_hash", k.stale as "k$stale", k.scopes as "k$scopes", k.allowed_cidrs as "k$cidrs",
            k.expired as "k$expired", ${hit ? '(select count from hit)' : 'null'} as "k$hits", a.*
       from k join accounts a on a.id = k.account_id`,
    [resolutionSeconds, hash, ...(hit ? [hit.bucketPrefix, hit.windowStart] : [])],
  );
  if (!row) return undefined;
  const account = Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('k$')));
  return {
    id: String(row['k$id']),
    key_hash: String(row['k$key_hash']),
    stale: Boolean(row['k$stale']),
    scopes: row['k$scopes'] as string[] | null,
    cidrs: row['k$cidrs'] as string[] | null,
    expired: Boolean(row['k$expired']),
    hits: row['k$hits'] == null ? undefined : Number(row['k$hits']),
    account,
  };
}

export interface KeyInsert {
  id: string;
  accountId: string;
  name: string | null;
  prefix: string;
  lastFour: string;
  keyHash: string;
  scopes: string[] | null;
  cidrs: string[] | null;
  validUntil: Date | null;
}

/** A text[] from a JSON array parameter (the driver would spread a JS array into a list); `[]` or null is null. */
const TEXT_ARRAY = '(select array_agg(v) from jsonb_array_elements_text(?::jsonb) v)';
const jsonArray = (a: string[] | null) => (a ? JSON.stringify(a) : null);

export async function insertKeyRow(em: EntityManager, k: KeyInsert): Promise<void> {
  await em.execute(
    `insert into api_keys (id, account_id, name, prefix, last_four, key_hash, scopes, allowed_cidrs, valid_until)
     values (?, ?, ?, ?, ?, ?, ${TEXT_ARRAY}, ${TEXT_ARRAY}, ?)`,
    [k.id, k.accountId, k.name, k.prefix, k.lastFour, k.keyHash, jsonArray(k.scopes), jsonArray(k.cidrs), k.validUntil],
  );
}

export async function touchKeyLastUsed(em: EntityManager, keyId: string): Promise<void> {
  await em.execute('update api_keys set last_used_at = now() where id = ?', [keyId]);
}

/**
 * Accounts whose id is `term` (when it is a UUID), or whose name or signing-in reseller's email
 * contains it (case-insensitive), newest first.
 */
export async function accountsMatching(em: EntityManager, term: string, termIsUuid: boolean, limit: number) {
  return em.execute<{ id: string; name: string; email: string | null }[]>(
    `select a.id, a.name, u.email from accounts a left join users u on u.account_id = a.id
      where ${termIsUuid ? 'a.id = ?::uuid or ' : ''}position(lower(?) in lower(a.name)) > 0 or position(lower(?) in coalesce(u.email, '')) > 0
      order by a.created_at desc limit ?`,
    [...(termIsUuid ? [term] : []), term, term, limit],
  );
}

/** An account's name and the email of the reseller who signs in to it (`accountId` must be a UUID). */
export async function accountNameAndEmail(
  em: EntityManager,
  accountId: string,
): Promise<{ name: string; email: string | null } | undefined> {
  const [row] = await em.execute<{ name: string; email: string | null }[]>(
    'select a.name, u.email from accounts a left join users u on u.account_id = a.id where a.id = ?::uuid',
    [accountId],
  );
  return row;
}
