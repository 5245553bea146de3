import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountSchema, ApiKeySchema, type Account } from '../db/entities';

const KEY_PREFIX = 'wsk_';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export async function createAccount(em: EntityManager, name: string): Promise<{ accountId: string; apiKey: string }> {
  const accountId = randomUUID();
  em.create(AccountSchema, { id: accountId, name });
  await em.flush();
  const apiKey = await createApiKey(em, accountId);
  return { accountId, apiKey };
}

/** Creates a key and returns it: the only time the plain key exists; only its hash is stored. */
export async function createApiKey(em: EntityManager, accountId: string): Promise<string> {
  const account = await em.findOne(AccountSchema, { id: accountId });
  if (!account) throw new Error(`unknown account ${accountId}`);
  const apiKey = `${KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
  em.create(ApiKeySchema, { id: randomUUID(), accountId, prefix: apiKey.slice(0, 12), keyHash: hashApiKey(apiKey) });
  await em.flush();
  return apiKey;
}

export interface Principal {
  account: Account;
  apiKeyId: string;
}

/** Resolves a bearer key to its account, or undefined. */
export async function authenticate(em: EntityManager, presented: string): Promise<Principal | undefined> {
  if (!presented.startsWith(KEY_PREFIX) || presented.length > 200) return undefined;
  const hash = hashApiKey(presented);
  const key = await em.findOne(ApiKeySchema, { keyHash: hash, revokedAt: null });
  // The lookup is by hash; compare again in constant time so no timing reveals a near match.
  if (!key || !timingSafeEqual(Buffer.from(key.keyHash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
  const account = await em.findOne(AccountSchema, { id: key.accountId });
  return account ? { account, apiKeyId: key.id } : undefined;
}
