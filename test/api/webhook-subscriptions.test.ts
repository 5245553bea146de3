import { generateCode } from '../../src/codes';
import { adjustBalance, importStock } from '../../src/services/payments/admin';
import { setProductPrice } from '../../src/services/supply/prices';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { startReceiver, verifySignature, type Receiver, type Received } from '../helpers/webhook-receiver';

// Event subscriptions (issue 40 item 1, beyond spec 1.4.0): an endpoint may name the events it
// receives; product.updated and balance.low come only to one that names them, export.ready and
// batch.completed to one without a list or one that names them, all signed and delivered
// by the same outbox and delivery workflow as the spec's events; "resend every failed or cancelled
// delivery since T" is bounded per call and harmless to repeat. The coalescing window is 2 s here
// (PRODUCT_UPDATE_COALESCE_SECONDS) and a delivery gives up after one attempt, so failures are quick.
let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await startHarness({
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    PRODUCT_UPDATE_COALESCE_SECONDS: '2',
    WEBHOOK_MAX_ATTEMPTS: '1',
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.stop();
});

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

const em = () => h.services.orm.em.fork();
const ofEvent = (event: string) => (all: Received[]) =>
  all.filter((r) => r.path === '/hook' && r.body?.event === event);

/** The events of one type the outbox holds for an account. */
async function eventRows(accountId: string, type: string) {
  return em().execute<{ id: string; payload: Record<string, unknown> }[]>(
    'select id, payload from events where account_id = ? and type = ? order by created_at, id',
    [accountId, type],
  );
}

/** Every product change has been looked at: nothing is waiting for its coalescing window. */
const announced = () =>
  eventually(
    async () =>
      Number((await em().execute<{ n: string }[]>('select count(*) as n from product_update_marks'))[0].n) === 0,
    20_000,
  );

test('product.updated: a price change (two within the window) and a stock import each reach a subscribed endpoint once; an unsubscribed one gets none', async () => {
  const subscribed = await h.account();
  const other = await h.account();
  const [rs, ro] = [await receiver(), await receiver()];
  const put = await client(h.apiUrl, subscribed.apiKey).put('/webhook', {
    url: rs.url,
    events: ['order.delivered', 'product.updated'],
  });
  expect(put.body).toEqual({
    ok: true,
    url: rs.url,
    secret: expect.stringMatching(/^whsec_/),
    events: ['order.delivered', 'product.updated'],
  });
  // An endpoint that names no events is answered exactly as before lists existed.
  const plain = await client(h.apiUrl, other.apiKey).put('/webhook', { url: ro.url });
  expect(plain.body).toEqual({ ok: true, url: ro.url, secret: expect.stringMatching(/^whsec_/) });
  expect((await client(h.apiUrl, other.apiKey).get('/webhook')).body).toEqual({ url: ro.url });

  // Two changes of the Lv1 price within the window: one event, with the price after both.
  await setProductPrice(em(), { productId: 'prod_telegram_premium_3m', level: 1, price: '21.00' });
  await setProductPrice(em(), { productId: 'prod_telegram_premium_3m', level: 1, price: '21.50' });
  const [priced] = await rs.waitFor(1, ofEvent('product.updated'));
  expect(verifySignature(put.body.secret, priced.raw, priced.headers['x-wholesale-signature'])).toBe(true);
  expect(priced.body).toEqual({
    eventId: expect.stringMatching(/^evt_/),
    event: 'product.updated',
    timestamp: expect.any(Number),
    productId: 'prod_telegram_premium_3m',
    changed: ['price'],
    price: '21.50',
    currency: 'USDT',
    inStock: true,
    available: true,
    stockMode: 'on_demand',
    stock: null,
    stockCapped: false,
    availabilityStatus: expect.any(String),
    deliveryMode: expect.any(String),
  });
  expect((await client(h.apiUrl, subscribed.apiKey).get('/products/prod_telegram_premium_3m')).body.price).toBe(
    '21.50',
  );
  await announced();

  // A change at another level is no change for this Lv1 account.
  await setProductPrice(em(), { productId: 'prod_telegram_premium_3m', level: 2, price: '20.00' });
  await announced();

  // A stock import: the inventory product was out of stock, now it has three codes.
  await importStock(em(), 'prod_spotify_premium_1m', [generateCode(), generateCode(), generateCode()]);
  const [, stocked] = await rs.waitFor(2, ofEvent('product.updated'));
  expect(stocked.body).toMatchObject({
    productId: 'prod_spotify_premium_1m',
    changed: ['available', 'stock'],
    available: true,
    stock: 3,
    stockMode: 'inventory',
  });
  await announced();

  expect((await eventRows(subscribed.accountId, 'product.updated')).map((e) => e.payload.productId)).toEqual([
    'prod_telegram_premium_3m',
    'prod_spotify_premium_1m',
  ]);
  expect(rs.accepted().filter((r) => r.body.event === 'product.updated')).toHaveLength(2);
  expect(await eventRows(other.accountId, 'product.updated')).toEqual([]);
  expect(ofEvent('product.updated')(ro.received)).toEqual([]);
});

test('balance.low: crossing the threshold emits one event, with the ledger change that crossed it; back up and down again, one more', async () => {
  const { accountId, apiKey } = await h.account('50.00');
  const r = await receiver();
  const api = client(h.apiUrl, apiKey);
  const refused = await api.put('/webhook', { url: r.url, events: ['balance.low'] });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({ error: 'invalid_input', details: { field: 'balanceLowThreshold' } });
  const put = await api.put('/webhook', { url: r.url, events: ['balance.low'], balanceLowThreshold: '20' });
  expect(put.body).toEqual({
    ok: true,
    url: r.url,
    secret: expect.stringMatching(/^whsec_/),
    events: ['balance.low'],
    balanceLowThreshold: '20.00',
  });

  const order = (id: string) => api.post('/orders', { externalOrderId: id, productId: 'prod_chatgpt_plus_1m', qty: 1 });
  expect((await order('low-1')).status).toBe(200); // 50 → 32: above the threshold
  const crossing = await order('low-2'); // 32 → 14: crosses
  expect(crossing.status).toBe(200);
  const adjust = (amount: string) =>
    adjustBalance(em(), { accountId, amount, note: 'test', levelThresholds: h.config.LEVEL_THRESHOLDS });
  await adjust('-4.00'); // 14 → 10: already below
  await adjust('30.00'); // 10 → 40: back above
  await adjust('-25.00'); // 40 → 15: crosses again

  const ledger = await expectLedgerMatchesBalance(h, accountId);
  expect(ledger.balance).toBe('15.00');
  expect(ledger.rows.map((row) => [row.type, row.amount, row.balance_after])).toEqual([
    ['adjust', '50.00', '50.00'],
    ['purchase', '-18.00', '32.00'],
    ['purchase', '-18.00', '14.00'],
    ['adjust', '-4.00', '10.00'],
    ['adjust', '30.00', '40.00'],
    ['adjust', '-25.00', '15.00'],
  ]);
  // Written with the changes themselves: all there once the last change has returned.
  expect((await eventRows(accountId, 'balance.low')).map((e) => e.payload)).toEqual([
    {
      balance: '14.00',
      threshold: '20.00',
      currency: 'USDT',
      transactionType: 'purchase',
      orderId: crossing.body.orderId,
    },
    { balance: '15.00', threshold: '20.00', currency: 'USDT', transactionType: 'adjust', orderId: null },
  ]);
  const got = await r.waitFor(2, ofEvent('balance.low'));
  expect(got.map((g) => [g.body.balance, g.body.transactionType])).toEqual([
    ['14.00', 'purchase'],
    ['15.00', 'adjust'],
  ]);
  for (const g of got) expect(verifySignature(put.body.secret, g.raw, g.headers['x-wholesale-signature'])).toBe(true);
  // The endpoint named only balance.low: the orders' order.delivered events were not sent to it.
  expect(r.received.filter((g) => g.body?.event !== 'balance.low')).toEqual([]);
});

test('resend since T: exactly the failed deliveries created from T on, a bounded page per call, and nothing twice', async () => {
  const { apiKey } = await h.account();
  const r = await receiver();
  r.otherwise = 500;
  const api = client(h.apiUrl, apiKey);
  await api.put('/webhook', { url: r.url });
  const status = (id: string, want: string) =>
    eventually(async () =>
      ((await api.get('/webhook/deliveries?limit=100')).body.deliveries as any[]).find(
        (d) => d.id === id && d.status === want,
      ),
    );
  const testEvent = async (want: string) => {
    const sent = await api.post('/webhook/test', {});
    return { ...sent.body, delivery: await status(sent.body.deliveryId, want) };
  };

  const before = await testEvent('failed');
  const since = before.delivery.createdAt + 1;
  await eventually(
    async () => Number((await em().execute<{ t: string }[]>('select extract(epoch from now()) as t'))[0].t) >= since,
  );
  const failed1 = await testEvent('failed');
  r.script([200]);
  const succeeded = await testEvent('succeeded');
  const failed2 = await testEvent('failed');
  r.otherwise = 200;

  const first = await api.post('/webhook/deliveries/resend', { since, limit: 1 });
  expect(first.body).toEqual({ ok: true, resent: 1, deliveryIds: [failed1.deliveryId], hasMore: true });
  const second = await api.post('/webhook/deliveries/resend', { since, limit: 1 });
  expect(second.body).toEqual({ ok: true, resent: 1, deliveryIds: [failed2.deliveryId], hasMore: false });
  await status(failed1.deliveryId, 'succeeded');
  await status(failed2.deliveryId, 'succeeded');
  expect((await api.post('/webhook/deliveries/resend', { since })).body).toEqual({
    ok: true,
    resent: 0,
    deliveryIds: [],
    hasMore: false,
  });

  const requests = (eventId: string) => r.received.filter((g) => g.body?.eventId === eventId).map((g) => g.reply);
  expect(requests(before.eventId)).toEqual([500]);
  expect(requests(failed1.eventId)).toEqual([500, 200]);
  expect(requests(succeeded.eventId)).toEqual([200]);
  expect(requests(failed2.eventId)).toEqual([500, 200]);
  expect((await status(before.deliveryId, 'failed')).attempts).toBe(1);
});

test('export.ready and batch.completed reach an endpoint without a list and one that names them; one whose list leaves them out gets neither', async () => {
  const range = {
    from: new Date(Date.now() - 86_400_000).toISOString(),
    to: new Date(Date.now() + 60_000).toISOString(),
  };
  const endpoints = {
    plain: undefined,
    named: ['order.delivered', 'export.ready', 'batch.completed'],
    without: ['order.delivered'],
  };
  const runs = await Promise.all(
    Object.entries(endpoints).map(async ([name, events]) => {
      const { accountId, apiKey } = await h.account('50.00');
      const r = await receiver();
      const api = client(h.apiUrl, apiKey);
      expect((await api.put('/webhook', { url: r.url, ...(events ? { events } : {}) })).status).toBe(200);
      expect((await api.post('/exports', { externalExportId: `sub-${name}`, kind: 'orders', ...range })).status).toBe(
        200,
      );
      const line = { externalOrderId: `sub-${name}-1`, productId: 'prod_chatgpt_plus_1m', qty: 1 };
      expect((await api.post('/batches', { externalBatchId: `sub-${name}`, lines: [line] })).status).toBe(200);
      return { name, accountId, r };
    }),
  );
  const outbox = async (accountId: string) =>
    em().execute<{ type: string; dispatched: boolean; delivered: boolean }[]>(
      `select e.type, e.dispatched_at is not null as dispatched, exists (select 1 from webhook_deliveries d where d.event_id = e.id) as delivered
       from events e where e.account_id = ? and e.type in ('export.ready', 'batch.completed') order by e.type`,
      [accountId],
    );
  for (const { name, accountId, r } of runs) {
    // Both events are written whatever the list says; the relay decides who gets a delivery.
    const rows = await eventually(async () => {
      const all = await outbox(accountId);
      return all.length === 2 && all.every((e) => e.dispatched) ? all : undefined;
    }, 30_000);
    const sent = name !== 'without';
    expect([name, rows]).toEqual([
      name,
      [
        { type: 'batch.completed', dispatched: true, delivered: sent },
        { type: 'export.ready', dispatched: true, delivered: sent },
      ],
    ]);
    if (sent) {
      const got = await r.waitFor(2, (all) =>
        all.filter((g) => g.path === '/hook' && ['export.ready', 'batch.completed'].includes(g.body?.event)),
      );
      expect([name, got.map((g) => g.body.event).sort()]).toEqual([name, ['batch.completed', 'export.ready']]);
    } else {
      // The batch's order.delivered, which the list names, came; neither of the two did.
      await r.waitFor(1, ofEvent('order.delivered'));
      expect(r.received.filter((g) => g.body?.event !== 'order.delivered')).toEqual([]);
    }
  }
});
