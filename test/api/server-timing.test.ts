import type { Server } from 'node:http';
import { createApp } from '../../src/app';
import { OrderSchema } from '../../src/db/entities/all-entities';
import { startHarness, type Harness } from '../helpers/harness';
import { ledgerOf } from '../helpers/money';
import { freePort } from '../helpers/ports';

// SERVER_TIMING (bench/anatomy.ts reads it): an order's answer says how long each step took in
// the API process, and when the update-with-start was sent, so the bench can line the API's clock
// up with Temporal's event times. Off by default: a reseller never sees the service's insides.
let on: Harness;
let off: Harness;

beforeAll(async () => {
  on = await startHarness({ SERVER_TIMING: 'true' });
  off = await startHarness({}, { worker: false });
}, 180_000);

afterAll(async () => {
  await on?.stop();
  await off?.stop();
});

function order(h: Harness, apiKey: string, externalOrderId: string) {
  return fetch(`${h.apiUrl}/orders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ externalOrderId, productId: 'prod_api_order_test', qty: 1 }),
  });
}

/** The account's issued codes, as Postgres holds them. */
async function issuedCodes(h: Harness, accountId: string): Promise<string[]> {
  const rows = await h.services.orm.em
    .fork()
    .execute<{ code: string }[]>('select code from issued_codes where account_id = ? order by id', [accountId]);
  return rows.map((r) => r.code);
}

/** `a;dur=1.5, b;desc="2"` → { a: 1.5, b: 2 } */
function steps(header: string): Record<string, number> {
  return Object.fromEntries(
    header.split(', ').map((part) => {
      const [name, param] = part.split(';');
      return [name, Number(param.split('=')[1].replace(/"/g, ''))];
    }),
  );
}

test('an order answers with each step of the API and the moment the update-with-start was sent', async () => {
  const { accountId, apiKey } = await on.account('1.00');
  const before = Date.now();
  const res = await order(on, apiKey, 'timing-1');
  expect(res.status).toBe(200);
  const timing = steps(res.headers.get('server-timing') ?? '');
  // The key and the rate limit are one statement (auth); the placement answers with everything
  // the response shows, its codes sealed to this process, so nothing is read after it.
  expect(Object.keys(timing).sort()).toEqual(['app', 'auth', 'engine', 'sent']);
  for (const name of ['auth', 'engine']) expect(timing[name]).toBeGreaterThan(0);
  expect(timing.app).toBeGreaterThanOrEqual(timing.auth + timing.engine);
  const { codes } = await res.json();
  expect(codes).toHaveLength(1);
  expect(codes).toEqual(await issuedCodes(on, accountId));
  expect(timing.sent).toBeGreaterThanOrEqual(before);
  expect(timing.sent).toBeLessThanOrEqual(Date.now());
  // The order itself is what it always is.
  const money = await ledgerOf(on, accountId);
  expect(money.balanceCents).toBe(99);
  expect(money.sumCents).toBe(99);
  expect(money.chainOk).toBe(true);
  expect(money.rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);

  // A replay is answered by the order's workflow (its placement finds the order), then the order
  // is read as it is now.
  const replay = steps((await order(on, apiKey, 'timing-1')).headers.get('server-timing') ?? '');
  expect(Object.keys(replay).sort()).toEqual(['app', 'auth', 'engine', 'read', 'sent']);
  expect((await ledgerOf(on, accountId)).rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);
});

test('an API process without an answer key (answers unsealed, as from a worker before the seal): the codes and checkout links are read from Postgres, and are its own', async () => {
  // A second API process on the same services, built without a key: its placements ask for no
  // seal, so the workflow's answer carries no secrets and the fallback read supplies them.
  const s = on.services;
  const app = createApp({
    orm: s.orm,
    temporal: s.temporal,
    providers: s.providers,
    config: on.config,
    logger: s.logger,
    worker: s.supervisor,
  });
  const port = await freePort();
  const server = await new Promise<Server>((ok) => {
    const listening = app.listen(port, '127.0.0.1', () => ok(listening));
  });
  const keyless = `http://127.0.0.1:${port}/wholesale/v1`;
  try {
    const { accountId, apiKey } = await on.account('1.00');
    const post = (path: string, body: Record<string, unknown>) =>
      fetch(`${keyless}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const checkoutUrlOf = async (orderId: string) =>
      (await on.services.orm.em.fork().findOneOrFail(OrderSchema, { id: orderId })).checkoutUrl;

    const balance = await post('/orders', { externalOrderId: 'keyless-1', productId: 'prod_api_order_test', qty: 1 });
    expect(balance.status).toBe(200);
    expect(Object.keys(steps(balance.headers.get('server-timing') ?? ''))).toContain('read');
    const { codes } = await balance.json();
    expect(codes).toHaveLength(1);
    expect(codes).toEqual(await issuedCodes(on, accountId));

    const intent = await post('/orders', {
      externalOrderId: 'keyless-2',
      productId: 'prod_chatgpt_team_1m',
      qty: 1,
      payment: 'intent',
    });
    expect(intent.status).toBe(200);
    expect(Object.keys(steps(intent.headers.get('server-timing') ?? ''))).toContain('read');
    const pending = await intent.json();
    expect(pending).toMatchObject({ status: 'pending', codes: [], paymentUrl: pending.checkoutUrl });
    expect(pending.checkoutUrl).toEqual(await checkoutUrlOf(pending.orderId));

    const topup = await post('/topup', { externalTopupId: 'keyless-3', amount: '5.00', currency: 'USDT' });
    expect(topup.status).toBe(200);
    const opened = await topup.json();
    expect(opened).toMatchObject({ status: 'pending', amount: '5.00' });
    expect(opened.checkoutUrl).toEqual(await checkoutUrlOf(opened.orderId));

    // Only the balance order moved money: one purchase of the test product.
    const money = await ledgerOf(on, accountId);
    expect(money.balanceCents).toBe(99);
    expect(money.sumCents).toBe(99);
    expect(money.rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);
  } finally {
    await new Promise((done) => server.close(done));
  }
});

test('without SERVER_TIMING no answer carries the header, errors included', async () => {
  const { apiKey } = await off.account('0');
  const res = await fetch(`${off.apiUrl}/balance`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('server-timing')).toBeNull();
  const unauth = await fetch(`${off.apiUrl}/balance`);
  expect(unauth.status).toBe(401);
  expect(unauth.headers.get('server-timing')).toBeNull();
});
