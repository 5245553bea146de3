import { adjustBalance } from '../../src/services/payments/admin';
import { AccountSession, shownKey, signedUp } from '../helpers/account-session';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// Issue 18, API keys in the account area (spec 5.2: self-generated, no review, shown once; 5.7
// left revocation and rotation open): a key is shown in full once, then only as prefix…last4;
// revocation is refused on the very next REST or MCP request; a rotated key works for the grace
// period (KEY_ROTATION_GRACE_SECONDS, 3 s here) and then stops. Spec 5 rule 5: another account's
// order, delivery or key id in any /account URL is 404, and nothing of theirs changes.
const GRACE_S = 3;
let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({
    KEY_ROTATION_GRACE_SECONDS: String(GRACE_S),
    SIGN_UP_RATE_LIMIT_PER_IP: '1000',
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

const balanceWith = (key: string) => call(`${h.apiUrl}/balance`, { key });
const mcpWith = (key: string) =>
  call(`${h.baseUrl}/mcp`, {
    key,
    headers: { accept: 'application/json, text/event-stream' },
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '0' } },
    },
  });

async function createKey(session: AccountSession, name: string) {
  const res = await session.submit('/account/keys', '/account/keys', { name });
  expect(res.status).toBe(200);
  expect(res.headers.get('cache-control')).toBe('no-store');
  return { key: shownKey(res.text), page: res.text };
}

const keyIdOf = async (apiKey: string) =>
  (
    await h.services.orm.em
      .fork()
      .execute<{ id: string }[]>('select id from api_keys where prefix = ? and last_four = ?', [
        apiKey.slice(0, 12),
        apiKey.slice(-4),
      ])
  )[0].id;

test('a key is shown in full once; afterwards only its prefix and last four; only its SHA-256 is stored', async () => {
  const { session, accountId } = await signedUp(h);
  const { key, page } = await createKey(session, 'production server');
  expect(key).toMatch(/^wsk_[A-Za-z0-9_-]{32}$/);
  expect(page).toContain('it is shown only this once');

  const again = await session.get('/account/keys');
  expect(again.text).not.toContain(key);
  expect(again.text).toContain(`${key.slice(0, 12)}…${key.slice(-4)}`);
  expect(again.text).toContain('production server');
  expect(again.text).toMatch(/data-label="Last used">never</);

  const [row] = await h.services.orm.em.fork().execute('select * from api_keys where account_id = ?', [accountId]);
  expect(JSON.stringify(row)).not.toContain(key);
  expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);

  // The same key authenticates REST and MCP; its last use shows up in the list.
  expect((await balanceWith(key)).body).toEqual({ balance: '0.00', currency: 'USDT' });
  expect((await mcpWith(key)).status).toBe(200);
  expect((await session.get('/account/keys')).text).not.toMatch(/data-label="Last used">never</);
});

test('revoking a key refuses the very next REST and MCP request with 401 unauthorized', async () => {
  const { session } = await signedUp(h);
  const { key } = await createKey(session, 'to revoke');
  const { key: kept } = await createKey(session, 'kept');
  expect((await balanceWith(key)).status).toBe(200);

  await session.get('/account/keys');
  const res = await session.post(`/account/keys/${await keyIdOf(key)}/revoke`);
  expect(res.status).toBe(303);
  const page = await session.get(res.location!);
  expect(page.text).toContain('The key is revoked.');
  expect(page.text).not.toContain(`${key.slice(0, 12)}…`);

  const rest = await balanceWith(key);
  expect(rest.status).toBe(401);
  expect(rest.body).toMatchObject({ error: 'unauthorized', retryable: false });
  const mcp = await mcpWith(key);
  expect(mcp.status).toBe(401);
  expect(mcp.body).toMatchObject({ error: 'unauthorized' });
  // The account's other key is untouched.
  expect((await balanceWith(kept)).status).toBe(200);
  // A revoked key cannot be revoked or rotated again.
  expect((await session.post(`/account/keys/${await keyIdOf(key)}/rotate`)).status).toBe(404);
});

test(`rotating a key shows the new one once; the old one works for the grace period (${GRACE_S} s), then is 401`, async () => {
  const { session } = await signedUp(h);
  const { key: old } = await createKey(session, 'rotating');
  await session.get('/account/keys');
  const rotated = await session.post(`/account/keys/${await keyIdOf(old)}/rotate`);
  expect(rotated.status).toBe(200);
  expect(rotated.headers.get('cache-control')).toBe('no-store');
  const fresh = shownKey(rotated.text);
  expect(fresh).not.toBe(old);
  expect(rotated.text).toContain('The old key keeps working until');

  // Both work during the grace period; the list names the old one as rotated and keeps the name.
  expect((await balanceWith(old)).status).toBe(200);
  expect((await balanceWith(fresh)).status).toBe(200);
  const list = await session.get('/account/keys');
  expect(list.text).not.toContain(fresh);
  expect(list.text.match(/rotating/g)).toHaveLength(2);
  expect(list.text).toContain('Rotated; works until');
  // The old key was already replaced: rotate its replacement instead.
  expect((await session.post(`/account/keys/${await keyIdOf(old)}/rotate`)).status).toBe(400);

  const started = Date.now();
  await eventually(async () => (await balanceWith(old)).status === 401, (GRACE_S + 10) * 1000, 250);
  expect(Date.now() - started).toBeGreaterThanOrEqual((GRACE_S - 1) * 1000);
  expect((await mcpWith(old)).status).toBe(401);
  expect((await balanceWith(fresh)).status).toBe(200);
  expect((await session.get('/account/keys')).text).not.toContain(`${old.slice(0, 12)}…`);
});

test('an account holds at most 20 active keys; the 21st is refused in plain words', async () => {
  const { session, accountId } = await signedUp(h);
  for (let i = 0; i < 20; i++) await createKey(session, `k${i}`);
  const res = await session.submit('/account/keys', '/account/keys', { name: 'one too many' });
  expect(res.status).toBe(400);
  expect(res.text).toContain('An account can hold at most 20 active keys; revoke one first');
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute('select count(*)::int as n from api_keys where account_id = ?', [accountId]);
  expect(n).toBe(20);
});

describe("another account's ids in /account URLs are 404 and change nothing", () => {
  let intruder: AccountSession;
  const victim = { orderId: '', deliveryId: '', keyId: '', key: '' };

  beforeAll(async () => {
    const v = await signedUp(h);
    await adjustBalance(h.services.orm.em.fork(), {
      accountId: v.accountId,
      amount: '50.00',
      note: 'test funding',
      levelThresholds: h.config.LEVEL_THRESHOLDS,
    });
    victim.key = (await createKey(v.session, 'victim key')).key;
    victim.keyId = await keyIdOf(victim.key);
    const api = client(h.apiUrl, victim.key);
    const order = await api.post('/orders', { externalOrderId: 'victim-1', productId: 'prod_chatgpt_plus_1m', qty: 1 });
    expect(order.status).toBe(200);
    victim.orderId = order.body.orderId;
    receiver.script([500]);
    await api.put('/webhook', { url: receiver.url });
    victim.deliveryId = (await api.post('/webhook/test', {})).body.deliveryId;
    await eventually(async () => (await api.get('/webhook/deliveries')).body.deliveries[0]?.attempts >= 1);
    intruder = (await signedUp(h)).session;
    await intruder.get('/account');
  });

  test.each([
    ['GET', '/account/orders/:order'],
    ['POST', '/account/orders/:order/codes'],
    ['GET', '/account/webhook/deliveries/:delivery'],
    ['POST', '/account/webhook/deliveries/:delivery/retry'],
    ['POST', '/account/keys/:key/revoke'],
    ['POST', '/account/keys/:key/rotate'],
  ])('%s %s', async (method, template) => {
    const path = template
      .replace(':order', victim.orderId)
      .replace(':delivery', victim.deliveryId)
      .replace(':key', victim.keyId);
    const res = method === 'GET' ? await intruder.get(path) : await intruder.post(path);
    expect(res.status).toBe(404);
    expect(res.text).toContain('This page does not exist, or it belongs to another account.');
    expect(res.text).not.toContain('victim');
  });

  test("afterwards the victim's key, order and delivery are as they were", async () => {
    expect((await balanceWith(victim.key)).body).toEqual({ balance: '32.00', currency: 'USDT' });
    const [{ revoked_at, expires_at }] = await h.services.orm.em
      .fork()
      .execute('select revoked_at, expires_at from api_keys where id = ?', [victim.keyId]);
    expect([revoked_at, expires_at]).toEqual([null, null]);
    const api = client(h.apiUrl, victim.key);
    expect((await api.get(`/orders/${victim.orderId}`)).body.codes).toHaveLength(1);
    expect((await api.get('/webhook/deliveries')).body.deliveries).toHaveLength(1);
    const accountId = (
      await h.services.orm.em.fork().execute('select account_id from api_keys where id = ?', [victim.keyId])
    )[0].account_id;
    await expectLedgerMatchesBalance(h, accountId);
  });
});
