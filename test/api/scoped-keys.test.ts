import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createApiKey, rotateApiKey } from '../../src/services/accounts/accounts';
import { keyLimits } from '../../src/services/accounts/key-access';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// Scoped keys (issue 40 item 2, beyond spec 1.4.0): a key made with scopes, networks or an expiry
// is refused outside them with 403 and a code naming why (insufficient_scope, ip_not_allowed,
// key_expired), before anything runs, on REST and MCP alike; a key made without them works as
// every key did. Every REST answer here is checked against the published OpenAPI document.
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

const ORDER = { productId: 'prod_chatgpt_plus_1m', qty: 1 };

/** An account holding 50.00 and a key on it with these limits. */
async function keyWith(limits: Parameters<typeof keyLimits>[0]) {
  const { accountId, apiKey: fullKey } = await h.account('50.00');
  const key = await createApiKey(h.services.orm.em.fork(), accountId, keyLimits(limits));
  return { accountId, key, fullKey };
}

/** The account's money and orders, to show that a refusal moved nothing. */
async function moneyAndOrders(accountId: string) {
  const ledger = await expectLedgerMatchesBalance(h, accountId);
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute<{ n: string }[]>('select count(*) as n from orders where account_id = ?', [accountId]);
  return { balance: ledger.balance, ledgerRows: ledger.rows.length, orders: Number(n) };
}

test('a read key lists and reads, and cannot order, top up or touch the webhook: 403 insufficient_scope, nothing changed', async () => {
  const { accountId, key } = await keyWith({ scopes: ['read'] });
  const api = client(h.apiUrl, key);
  for (const path of ['/products', '/products/prod_chatgpt_plus_1m', '/balance', '/orders', '/transactions']) {
    expect([path, (await api.get(path)).status]).toEqual([path, 200]);
  }
  const before = await moneyAndOrders(accountId);
  expect(before).toEqual({ balance: '50.00', ledgerRows: 1, orders: 0 });

  const refused = await api.post('/orders', { externalOrderId: 'scoped-1', ...ORDER });
  expect(refused.status).toBe(403);
  expect(refused.body).toEqual({
    error: 'insufficient_scope',
    message: expect.any(String),
    requestId: refused.headers.get('x-request-id'),
    retryable: false,
    details: { scope: 'orders' },
  });
  // The scope is checked before the body is read: a malformed order is refused for the scope too.
  expect((await api.post('/orders', { qty: 'x' })).body.error).toBe('insufficient_scope');
  expect((await api.post('/topup', { externalTopupId: 'scoped-t1', amount: '5.00' })).body).toMatchObject({
    error: 'insufficient_scope',
    details: { scope: 'topups' },
  });
  expect((await api.get('/webhook')).body).toMatchObject({
    error: 'insufficient_scope',
    details: { scope: 'webhooks' },
  });
  expect(await moneyAndOrders(accountId)).toEqual(before);
  expect((await api.get('/orders?externalOrderId=scoped-1')).body.orders).toEqual([]);

  // A rotated key keeps its scopes.
  const [{ id }] = await h.services.orm.em
    .fork()
    .execute<{ id: string }[]>('select id from api_keys where account_id = ? and scopes is not null', [accountId]);
  const rotated = await rotateApiKey(h.services.orm.em.fork(), accountId, id, 60);
  expect(rotated.key.scopes).toEqual(['read']);
  expect(
    (await client(h.apiUrl, rotated.apiKey).post('/orders', { externalOrderId: 'scoped-2', ...ORDER })).status,
  ).toBe(403);
});

test('a key with the orders scope orders (balance and ledger move once); one made without limits can do everything', async () => {
  const { accountId, key, fullKey } = await keyWith({ scopes: ['read', 'orders'] });
  const placed = await client(h.apiUrl, key).post('/orders', { externalOrderId: 'scoped-ok-1', ...ORDER });
  expect(placed.status).toBe(200);
  expect(placed.body.status).toBe('delivered');
  const ledger = await expectLedgerMatchesBalance(h, accountId);
  expect(ledger.balance).toBe('32.00');
  expect(ledger.rows.map((r) => [r.type, r.amount, r.balance_after])).toEqual([
    ['adjust', '50.00', '50.00'],
    ['purchase', '-18.00', '32.00'],
  ]);
  expect((await client(h.apiUrl, key).put('/webhook', { url: '' })).status).toBe(403);
  expect((await client(h.apiUrl, fullKey).put('/webhook', { url: '' })).status).toBe(200);
});

test('exports and batches: a read key exports (streamed and as a job) and reads batches, and cannot post one: 403 insufficient_scope, no batch, nothing changed', async () => {
  const { accountId, key, fullKey } = await keyWith({ scopes: ['read'] });
  const api = client(h.apiUrl, key);
  const range = {
    from: new Date(Date.now() - 86_400_000).toISOString(),
    to: new Date(Date.now() + 60_000).toISOString(),
  };
  const query = `from=${encodeURIComponent(range.from)}&to=${encodeURIComponent(range.to)}`;
  for (const path of [`/exports/orders.csv?${query}`, `/exports/ledger.csv?${query}`]) {
    expect([path, (await call(`${h.apiUrl}${path}`, { key })).status]).toEqual([path, 200]);
  }
  // A job writes down only what the key may already read.
  const job = await api.post('/exports', { externalExportId: 'scoped-export', kind: 'ledger', ...range });
  expect(job.status).toBe(200);
  const link = await eventually(
    async () => ((await api.get(`/exports/${job.body.exportId}`)).body.downloadUrl as string | null) ?? undefined,
  );
  // The link is its own credential: no key at all.
  expect((await fetch(link)).status).toBe(200);

  const before = await moneyAndOrders(accountId);
  const batch = { externalBatchId: 'scoped-batch', lines: [{ externalOrderId: 'scoped-b-1', ...ORDER }] };
  const refused = await api.post('/batches', batch);
  expect(refused.status).toBe(403);
  expect(refused.body).toMatchObject({ error: 'insufficient_scope', retryable: false, details: { scope: 'orders' } });
  const batches = async () =>
    Number(
      (
        await h.services.orm.em
          .fork()
          .execute<{ n: string }[]>('select count(*) as n from batches where account_id = ?', [accountId])
      )[0].n,
    );
  expect(await batches()).toBe(0);
  expect(await moneyAndOrders(accountId)).toEqual(before);

  // A key with every scope posts it; the read key then follows its progress and lines.
  const accepted = await client(h.apiUrl, fullKey).post('/batches', batch);
  expect(accepted.status).toBe(200);
  await eventually(async () => (await api.get(`/batches/${accepted.body.batchId}`)).body.status === 'completed');
  const lines = await api.get(`/batches/${accepted.body.batchId}/lines`);
  expect(lines.status).toBe(200);
  expect(lines.body.lines.map((l: { status: string }) => l.status)).toEqual(['placed']);
  expect(await batches()).toBe(1);
  const ledger = await expectLedgerMatchesBalance(h, accountId);
  expect(ledger.balance).toBe('32.00');
});

test('a key used from outside its networks is refused with ip_not_allowed; inside them it works', async () => {
  const { accountId, key } = await keyWith({ cidrs: ['203.0.113.0/24', '2001:db8::/32'] });
  // The test talks to the API over loopback, which TRUST_PROXY (loopback by default) lets name the client.
  const from = (ip: string) => ({ 'x-forwarded-for': ip });
  const inside = await call(`${h.apiUrl}/balance`, { key, headers: from('203.0.113.7') });
  expect(inside.status).toBe(200);
  expect((await call(`${h.apiUrl}/balance`, { key, headers: from('2001:db8::1') })).status).toBe(200);

  const before = await moneyAndOrders(accountId);
  for (const headers of [from('198.51.100.1'), from('2001:db9::1'), {}]) {
    const res = await call(`${h.apiUrl}/orders`, { key, headers, body: { externalOrderId: 'cidr-1', ...ORDER } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'ip_not_allowed', retryable: false });
  }
  const mcp = await call(`${h.baseUrl}/mcp`, {
    key,
    headers: { ...from('198.51.100.1'), accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });
  expect([mcp.status, mcp.body.error]).toEqual([403, 'ip_not_allowed']);
  expect(await moneyAndOrders(accountId)).toEqual(before);
});

test('an expired key is refused with key_expired; until then it works', async () => {
  const { accountId, key } = await keyWith({ expires: new Date(Date.now() + 4000).toISOString() });
  expect((await call(`${h.apiUrl}/balance`, { key })).status).toBe(200);
  const before = await moneyAndOrders(accountId);
  const refused = await eventually(async () => {
    const res = await call(`${h.apiUrl}/balance`, { key });
    return res.status === 403 ? res : undefined;
  });
  expect(refused.body).toMatchObject({ error: 'key_expired', retryable: false });
  const order = await call(`${h.apiUrl}/orders`, { key, body: { externalOrderId: 'expired-1', ...ORDER } });
  expect([order.status, order.body.error]).toEqual([403, 'key_expired']);
  expect(await moneyAndOrders(accountId)).toEqual(before);
});

test('MCP obeys the same scopes: a read key reads and is refused purchase_codes and create_topup; nothing changed', async () => {
  const { accountId, key } = await keyWith({ scopes: ['read'] });
  const mcp = new Client({ name: 'scoped-keys', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  try {
    const tool = async (name: string, args: Record<string, unknown> = {}) =>
      (await mcp.callTool({ name, arguments: args })) as CallToolResult;
    expect((await tool('get_balance')).structuredContent).toEqual({ balance: '50.00', currency: 'USDT' });
    const before = await moneyAndOrders(accountId);
    for (const [name, args, scope] of [
      ['purchase_codes', { externalOrderId: 'mcp-scoped-1', ...ORDER }, 'orders'],
      ['create_topup', { externalTopupId: 'mcp-scoped-t1', amount: '5.00' }, 'topups'],
    ] as const) {
      const res = await tool(name, args);
      expect(res.isError).toBe(true);
      expect(JSON.parse((res.content[0] as { text: string }).text)).toMatchObject({
        error: 'insufficient_scope',
        retryable: false,
        details: { scope },
      });
    }
    expect(await moneyAndOrders(accountId)).toEqual(before);
  } finally {
    await mcp.close();
  }
});

test('npx wholesale keys create --scopes --cidr --expires makes a limited key, printed once with its limits', async () => {
  const { accountId } = await h.account('50.00');
  const expires = `${new Date().getUTCFullYear() + 1}-01-01`;
  const root = resolve(__dirname, '..', '..');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      join(root, 'bin', 'wholesale.js'),
      'keys',
      'create',
      '--account',
      accountId,
      '--scopes',
      'read,orders',
      '--cidr',
      '203.0.113.0/24',
      '--expires',
      expires,
      '--by',
      'Olga Ops',
      '--reason',
      'read-and-order key for the shop',
    ],
    { cwd: root, env: { ...process.env, DATABASE_URL: h.databaseUrl } },
  );
  const made = JSON.parse(stdout);
  expect(made).toEqual({
    accountId,
    apiKey: expect.stringMatching(/^wsk_/),
    scopes: ['read', 'orders'],
    cidrs: ['203.0.113.0/24'],
    expiresAt: `${expires}T00:00:00.000Z`,
  });
  const headers = { 'x-forwarded-for': '203.0.113.20' };
  expect((await call(`${h.apiUrl}/balance`, { key: made.apiKey, headers })).status).toBe(200);
  expect(
    (
      await call(`${h.apiUrl}/topup`, {
        key: made.apiKey,
        headers,
        body: { externalTopupId: 'cli-scoped', amount: '5.00' },
      })
    ).body.error,
  ).toBe('insufficient_scope');
  expect((await call(`${h.apiUrl}/balance`, { key: made.apiKey })).body.error).toBe('ip_not_allowed');
});
