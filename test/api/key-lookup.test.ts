import { startServices, type Services } from '../../src/bootstrap';
import { createLogger } from '../../src/logger';
import { revokeApiKey } from '../../src/services/accounts/accounts';
import { freePort, startHarness, type Harness } from '../helpers/harness';
import { call } from '../helpers/http';

// Issue 39: a request's key and its per-minute budget are one statement (spec 5, 8). Two API
// processes on one database: each request is counted once in Postgres whichever process took it,
// a refused key counts nothing, and a key revoked through one is refused by the very next request
// to either, REST and MCP alike (nothing about a key is kept in a process).
let h: Harness;
let second: Services;
let secondUrl: string;

beforeAll(async () => {
  h = await startHarness({}, { worker: false });
  const port = await freePort();
  secondUrl = `http://127.0.0.1:${port}`;
  second = await startServices({
    config: { ...h.config, PORT: port },
    databaseUrl: h.databaseUrl,
    temporalAddress: h.config.TEMPORAL_ADDRESS!,
    registerSearchAttributes: false,
    logger: createLogger('silent'),
    api: true,
    worker: false,
  });
});
afterAll(async () => {
  await second?.stop();
  await h?.stop();
});

const apis = () => [h.baseUrl, secondUrl];

async function keyIdOf(accountId: string): Promise<string> {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ id: string }[]>('select id from api_keys where account_id = ?', [accountId]);
  return row.id;
}

/** The requests counted for a key, over every window. */
async function counted(keyId: string): Promise<number> {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ n: string | null }[]>('select sum(count) as n from rate_limits where bucket = ?', [`api:${keyId}`]);
  return Number(row.n ?? 0);
}

/** The HTTP status of an MCP `initialize` POST with this key. */
async function mcpStatus(baseUrl: string, key: string): Promise<number> {
  const res = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '0' } },
    }),
  });
  await res.text();
  return res.status;
}

test('each request is counted once, in the statement that checks its key, whichever process takes it', async () => {
  const { accountId, apiKey } = await h.account('0');
  const keyId = await keyIdOf(accountId);
  for (let i = 0; i < 6; i++) {
    const res = await call(`${apis()[i % 2]}/wholesale/v1/balance`, { key: apiKey });
    expect([res.status, res.headers.get('x-ratelimit-limit')]).toEqual([200, String(h.config.RATE_LIMIT_PER_MINUTE)]);
  }
  expect(await counted(keyId)).toBe(6);
  // MCP shares the budget: one more.
  expect(await mcpStatus(secondUrl, apiKey)).toBe(200);
  expect(await counted(keyId)).toBe(7);
  // A key that is not this one counts nothing.
  expect((await call(`${secondUrl}/wholesale/v1/balance`, { key: `${apiKey}x` })).status).toBe(401);
  expect(await counted(keyId)).toBe(7);
});

test('a key revoked through one process is refused by the very next request to either, REST and MCP', async () => {
  const { accountId, apiKey } = await h.account('0');
  for (const base of apis()) {
    expect((await call(`${base}/wholesale/v1/balance`, { key: apiKey })).status).toBe(200);
    expect(await mcpStatus(base, apiKey)).toBe(200);
  }
  const keyId = await keyIdOf(accountId);
  await revokeApiKey(h.services.orm.em.fork(), accountId, keyId);
  const countedBefore = await counted(keyId);
  for (const base of [...apis()].reverse()) {
    const res = await call(`${base}/wholesale/v1/balance`, { key: apiKey });
    expect([res.status, res.body.error]).toEqual([401, 'unauthorized']);
    expect(await mcpStatus(base, apiKey)).toBe(401);
  }
  expect(await counted(keyId)).toBe(countedBefore);
});
