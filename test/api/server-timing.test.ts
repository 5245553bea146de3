import { startHarness, type Harness } from '../helpers/harness';
import { ledgerOf } from '../helpers/money';

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

test('without SERVER_TIMING no answer carries the header, errors included', async () => {
  const { apiKey } = await off.account('0');
  const res = await fetch(`${off.apiUrl}/balance`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('server-timing')).toBeNull();
  const unauth = await fetch(`${off.apiUrl}/balance`);
  expect(unauth.status).toBe(401);
  expect(unauth.headers.get('server-timing')).toBeNull();
});
