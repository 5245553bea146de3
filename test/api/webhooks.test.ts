import { reconcileNow } from '../../src/services/reconcile';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { startReceiver, verifySignature, type Receiver, type Received } from '../helpers/webhook-receiver';

// Spec part 6 and 4.5 (issue 5): signed webhooks delivered from the events outbox by one
// webhookDeliveryWorkflow per delivery, against a local receiver (insecure URLs allowed) with a
// short backoff from config: base 1 s doubling, capped at 4 s, 4 attempts, 500 ms deadline.
const BASE_S = 1;
const CAP_S = 4;
const TIMEOUT_MS = 500;
const MAX_ATTEMPTS = 4;

let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await startHarness({
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    WEBHOOK_RETRY_BASE_SECONDS: String(BASE_S),
    WEBHOOK_RETRY_CAP_SECONDS: String(CAP_S),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
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

/** An account (funded if asked) whose webhook points at `to`. */
async function subscriber(to: Receiver, balance = '0') {
  const acct = await h.account(balance);
  const api = client(h.apiUrl, acct.apiKey);
  const put = await api.put('/webhook', { url: to.url });
  expect(put.status).toBe(200);
  return { ...acct, api, secret: put.body.secret as string };
}

type Api = ReturnType<typeof client>;
async function delivery(api: Api, id: string) {
  const res = await api.get('/webhook/deliveries?limit=100');
  expect(res.status).toBe(200);
  return (res.body.deliveries as any[]).find((d) => d.id === id);
}
const deliveryReaches = (api: Api, id: string, status: string, timeoutMs = 30_000) =>
  eventually(async () => {
    const d = await delivery(api, id);
    return d?.status === status ? d : undefined;
  }, timeoutMs);

const forEvent = (eventId: string) => (all: Received[]) =>
  all.filter((r) => r.path === '/hook' && r.body?.eventId === eventId);
const retry = (api: Api, id: string) => api.post(`/webhook/deliveries/${id}/retry`, {});

describe('PUT /webhook (spec 4.5)', () => {
  test('the signing secret is returned once, rotates on every reconfiguration, and "" clears the webhook', async () => {
    const r = await receiver();
    const { api } = await h.account().then((a) => ({ api: client(h.apiUrl, a.apiKey) }));
    const first = await api.put('/webhook', { url: r.url });
    expect(first.body).toEqual({ ok: true, url: r.url, secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{32}$/) });
    expect(await api.get('/webhook').then((g) => g.body)).toEqual({ url: r.url });

    const second = await api.put('/webhook', { url: r.url });
    expect(second.body.secret).toMatch(/^whsec_/);
    expect(second.body.secret).not.toBe(first.body.secret);

    const cleared = await api.put('/webhook', { url: '' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ ok: true, url: '' });
    expect(await api.get('/webhook').then((g) => g.body)).toEqual({ url: '' });
    const test = await api.post('/webhook/test', {});
    expect(test.status).toBe(409);
    expect(test.body).toMatchObject({ error: 'webhook_not_configured', retryable: false });
  });

  test.each([
    ['no url', {}],
    ['a url that is not a string', { url: 5 }],
    ['an unknown field', { url: 'http://127.0.0.1:9/x', extra: true }],
    ['a private address, even with the insecure flag', { url: 'http://10.0.0.1/hook' }],
    ['the metadata address, even with the insecure flag', { url: 'http://169.254.169.254/latest' }],
    ['credentials in the url', { url: 'http://user:secret@127.0.0.1:9/hook' }],
    ['a relative url', { url: '/hook' }],
  ])('rejects %s with 400 invalid_input and keeps the previous webhook', async (_name, body) => {
    const r = await receiver();
    const { api } = await subscriber(r);
    const res = await api.put('/webhook', body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_input', requestId: expect.any(String) });
    expect(await api.get('/webhook').then((g) => g.body)).toEqual({ url: r.url });
  });
});

describe('delivery (spec part 6)', () => {
  test('webhook.test: one POST signed over the raw body, with the event and delivery id headers, recorded as succeeded', async () => {
    const r = await receiver();
    const { api, accountId, secret } = await subscriber(r);
    const res = await api.post('/webhook/test', {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      deliveryId: expect.stringMatching(/^whd_/),
      eventId: expect.stringMatching(/^evt_/),
    });
    const { deliveryId, eventId } = res.body;

    const [got] = await r.waitFor(1, forEvent(eventId));
    expect(verifySignature(secret, got.raw, got.headers['x-wholesale-signature'])).toBe(true);
    expect(verifySignature('whsec_wrong', got.raw, got.headers['x-wholesale-signature'])).toBe(false);
    const [event] = await h.services.orm.em
      .fork()
      .execute<{ ts: string }[]>(
        'select floor(extract(epoch from created_at))::int as ts from events where id = ? and account_id = ?',
        [eventId, accountId],
      );
    expect(got.body).toEqual({
      eventId,
      event: 'webhook.test',
      timestamp: Number(event.ts),
      message: expect.any(String),
    });
    expect(got.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': expect.stringMatching(/^Wholesale-Webhooks\//),
      'x-wholesale-event-id': eventId,
      'x-wholesale-delivery-id': `${deliveryId}.1`,
      'x-wholesale-timestamp': String(event.ts),
    });

    const d = await deliveryReaches(api, deliveryId, 'succeeded');
    expect(d).toEqual({
      id: deliveryId,
      eventId,
      event: 'webhook.test',
      status: 'succeeded',
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
    });
    expect(d.updatedAt).toBeGreaterThanOrEqual(d.createdAt);
  });

  test('a real balance order emits order.delivered, delivered flat with the payload of spec part 6', async () => {
    const r = await receiver();
    const { api, accountId, secret } = await subscriber(r, '1.00');
    const order = await api.post('/orders', {
      externalOrderId: 'wh-order-1',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    expect(order.status).toBe(200);
    expect(order.body.status).toBe('delivered');

    const [got] = await r.waitFor(1, (all) => all.filter((x) => x.body?.event === 'order.delivered'));
    expect(got.body).toEqual({
      eventId: expect.stringMatching(/^evt_/),
      event: 'order.delivered',
      timestamp: expect.any(Number),
      orderId: order.body.orderId,
      externalOrderId: 'wh-order-1',
      productId: 'prod_api_order_test',
      qty: 1,
      codes: order.body.codes,
      redeemUrl: order.body.redeemUrl,
      deliveryType: 'redemption',
    });
    expect(got.headers['x-wholesale-event-id']).toBe(got.body.eventId);
    expect(verifySignature(secret, got.raw, got.headers['x-wholesale-signature'])).toBe(true);
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('0.99');
  });

  test('500, then 302 (not followed), then a hang past the timeout, then 200: delivered on the fourth attempt, waits growing as configured, one event id', async () => {
    const r = await receiver();
    r.script([500, 302, 'hang', 200]);
    const { api, secret } = await subscriber(r);
    const { deliveryId, eventId } = (await api.post('/webhook/test', {})).body;

    const got = await r.waitFor(4, forEvent(eventId), 40_000);
    expect(got.map((x) => x.reply)).toEqual([500, 302, 'hang', 200]);
    // Redeliveries share the event id and the body; each attempt has its own delivery id.
    expect(new Set(got.map((x) => x.headers['x-wholesale-event-id']))).toEqual(new Set([eventId]));
    expect(new Set(got.map((x) => x.raw)).size).toBe(1);
    expect(got.map((x) => x.headers['x-wholesale-delivery-id'])).toEqual([1, 2, 3, 4].map((n) => `${deliveryId}.${n}`));
    expect(got.every((x) => verifySignature(secret, x.raw, x.headers['x-wholesale-signature']))).toBe(true);
    // A receiver deduping on the event id processes it once: exactly one attempt was answered 2xx.
    expect(r.accepted().filter((x) => x.body?.eventId === eventId)).toHaveLength(1);
    // Waits are lower bounds from config: 1 s, 2 s, then 4 s after the 500 ms deadline of the hang.
    expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(BASE_S * 1000);
    expect(got[2].at - got[1].at).toBeGreaterThanOrEqual(2 * BASE_S * 1000);
    expect(got[3].at - got[2].at).toBeGreaterThanOrEqual(TIMEOUT_MS + CAP_S * 1000);
    expect(r.received.filter((x) => x.path === '/redirected')).toHaveLength(0);

    const d = await deliveryReaches(api, deliveryId, 'succeeded');
    expect(d).toMatchObject({ attempts: 4, lastStatusCode: 200, lastError: null, nextAttemptAt: null });
  });

  test('after the maximum attempts the delivery is failed; a manual retry delivers it with the same event id', async () => {
    const r = await receiver();
    r.otherwise = 500;
    const { api } = await subscriber(r);
    const { deliveryId, eventId } = (await api.post('/webhook/test', {})).body;

    const failed = await deliveryReaches(api, deliveryId, 'failed', 40_000);
    expect(failed).toMatchObject({
      attempts: MAX_ATTEMPTS,
      lastStatusCode: 500,
      lastError: 'HTTP 500',
      nextAttemptAt: null,
    });
    expect(await r.waitFor(MAX_ATTEMPTS, forEvent(eventId))).toHaveLength(MAX_ATTEMPTS);

    // Spec 4.5: another account's delivery id is not found; so is an unknown id.
    const stranger = client(h.apiUrl, (await h.account()).apiKey);
    await stranger.put('/webhook', { url: r.url });
    for (const res of [await retry(stranger, deliveryId), await retry(api, 'whd_unknown')]) {
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }

    r.otherwise = 200;
    const res = await retry(api, deliveryId);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    const d = await deliveryReaches(api, deliveryId, 'succeeded');
    expect(d).toMatchObject({ attempts: MAX_ATTEMPTS + 1, lastStatusCode: 200, lastError: null });
    const all = await r.waitFor(MAX_ATTEMPTS + 1, forEvent(eventId));
    expect(all.at(-1)!.headers).toMatchObject({
      'x-wholesale-event-id': eventId,
      'x-wholesale-delivery-id': `${deliveryId}.${MAX_ATTEMPTS + 1}`,
    });
  });

  test('reconfiguring the URL mid-retry delivers to the new URL, signed with the new secret', async () => {
    const oldReceiver = await receiver();
    oldReceiver.otherwise = 500;
    const newReceiver = await receiver();
    const { api, secret: oldSecret } = await subscriber(oldReceiver);
    const { deliveryId, eventId } = (await api.post('/webhook/test', {})).body;
    await oldReceiver.waitFor(1, forEvent(eventId));

    const { secret: newSecret } = (await api.put('/webhook', { url: newReceiver.url })).body;
    const [got] = await newReceiver.waitFor(1, forEvent(eventId));
    expect(verifySignature(newSecret, got.raw, got.headers['x-wholesale-signature'])).toBe(true);
    expect(verifySignature(oldSecret, got.raw, got.headers['x-wholesale-signature'])).toBe(false);
    expect(got.headers['x-wholesale-event-id']).toBe(eventId);
    await deliveryReaches(api, deliveryId, 'succeeded');
  });

  test('ordering is not assumed: an earlier event held back by failures arrives after later ones', async () => {
    const r = await receiver();
    const { api } = await subscriber(r);
    const first = (await api.post('/webhook/test', {})).body.eventId as string;
    // The first event fails until both later events have been accepted.
    r.otherwise = (req) =>
      req.body?.eventId === first && r.accepted().filter((x) => x.body?.eventId !== first).length < 2 ? 500 : 200;
    await r.waitFor(1, forEvent(first));
    const later = [
      (await api.post('/webhook/test', {})).body.eventId,
      (await api.post('/webhook/test', {})).body.eventId,
    ];

    const accepted = await eventually(async () => (r.accepted().length === 3 ? r.accepted() : undefined), 30_000);
    expect(new Set(accepted.map((x) => x.body.eventId))).toEqual(new Set([first, ...later]));
    expect(accepted.at(-1)!.body.eventId).toBe(first);
  });

  test('clearing the webhook cancels a pending delivery; retrying it needs a webhook again, then delivers', async () => {
    const r = await receiver();
    r.otherwise = 500;
    const { api } = await subscriber(r);
    const { deliveryId, eventId } = (await api.post('/webhook/test', {})).body;
    await r.waitFor(1, forEvent(eventId));
    await api.put('/webhook', { url: '' });

    const cancelled = await deliveryReaches(api, deliveryId, 'cancelled');
    expect(cancelled).toMatchObject({ lastError: 'webhook not configured', nextAttemptAt: null });
    const refused = await retry(api, deliveryId);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('webhook_not_configured');

    r.otherwise = 200;
    await api.put('/webhook', { url: r.url });
    expect((await retry(api, deliveryId)).status).toBe(200);
    await deliveryReaches(api, deliveryId, 'succeeded');
    expect(r.accepted().filter((x) => x.body?.eventId === eventId)).toHaveLength(1);
  });

  test('a succeeded delivery can be sent again on request, with the same event id', async () => {
    const r = await receiver();
    const { api } = await subscriber(r);
    const { deliveryId, eventId } = (await api.post('/webhook/test', {})).body;
    await deliveryReaches(api, deliveryId, 'succeeded');
    expect((await retry(api, deliveryId)).status).toBe(200);
    const both = await r.waitFor(2, forEvent(eventId));
    expect(both.map((x) => x.headers['x-wholesale-delivery-id'])).toEqual([`${deliveryId}.1`, `${deliveryId}.2`]);
  });
});

describe('the events outbox (spec part 6: persisted first, then delivered)', () => {
  test('an event written without NOTIFY is still found by the sweep and delivered', async () => {
    const r = await receiver();
    const { api, accountId } = await subscriber(r);
    await h.services.orm.em
      .fork()
      .execute(
        `insert into events (id, account_id, type, payload) values ('evt_swept_1', ?, 'webhook.test', '{"message":"swept"}')`,
        [accountId],
      );
    const [got] = await r.waitFor(1, forEvent('evt_swept_1'));
    expect(got.body).toMatchObject({ eventId: 'evt_swept_1', event: 'webhook.test', message: 'swept' });
    const list = (await api.get('/webhook/deliveries')).body.deliveries;
    expect(list.filter((d: any) => d.eventId === 'evt_swept_1')).toHaveLength(1);
  });

  test('a pending delivery whose workflow was never started (lost start) is started by the reconciler and delivered', async () => {
    const r = await receiver();
    const { api, accountId } = await subscriber(r);
    const em = h.services.orm.em.fork();
    await em.execute(
      `insert into events (id, account_id, type, payload, dispatched_at) values ('evt_lost_1', ?, 'webhook.test', '{"message":"lost"}', now())`,
      [accountId],
    );
    await em.execute(
      `insert into webhook_deliveries (id, event_id, account_id, status, next_attempt_at)
       values ('whd_lost_1', 'evt_lost_1', ?, 'pending', now() - interval '5 minutes')`,
      [accountId],
    );

    const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const { findings } = await reconcileNow({
      orm: h.services.orm,
      temporal: h.services.temporal,
      config: h.config,
      log: quiet,
    });
    expect(findings).toContainEqual(
      expect.objectContaining({ kind: 'webhook_delivery', subjectId: 'whd_lost_1', action: 'started' }),
    );
    const [got] = await r.waitFor(1, forEvent('evt_lost_1'));
    expect(got.headers['x-wholesale-delivery-id']).toBe('whd_lost_1.1');
    expect(await deliveryReaches(api, 'whd_lost_1', 'succeeded')).toMatchObject({ attempts: 1, lastStatusCode: 200 });
  });

  test('events of an account with no webhook are not delivered', async () => {
    const acct = await h.account('1.00');
    const api = client(h.apiUrl, acct.apiKey);
    const order = await api.post('/orders', { externalOrderId: 'wh-none-1', productId: 'prod_api_order_test', qty: 1 });
    expect(order.body.status).toBe('delivered');
    const em = h.services.orm.em.fork();
    await eventually(async () => {
      const rows = await em.execute<{ dispatched: boolean }[]>(
        'select dispatched_at is not null as dispatched from events where account_id = ?',
        [acct.accountId],
      );
      return rows.length === 1 && rows[0].dispatched;
    });
    const deliveries = await em.execute('select id from webhook_deliveries where account_id = ?', [acct.accountId]);
    expect(deliveries).toHaveLength(0);
    expect((await api.get('/webhook/deliveries')).body).toEqual({ deliveries: [], nextCursor: null, hasMore: false });
    await expectLedgerMatchesBalance(h, acct.accountId);
  });
});

describe('GET /webhook/deliveries (spec 4.5, limits of part 8)', () => {
  test('newest first, cursor-paginated; a bad cursor or limit is rejected; other accounts see nothing', async () => {
    const r = await receiver();
    const { api } = await subscriber(r);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await api.post('/webhook/test', {})).body.deliveryId);

    const page1 = await api.get('/webhook/deliveries?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body.deliveries.map((d: any) => d.id)).toEqual([ids[2], ids[1]]);
    expect(page1.body).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    const page2 = await api.get(`/webhook/deliveries?limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`);
    expect(page2.body.deliveries.map((d: any) => d.id)).toEqual([ids[0]]);
    expect(page2.body).toMatchObject({ hasMore: false, nextCursor: null });

    const other = await h.account();
    const foreign = await call(`${h.apiUrl}/webhook/deliveries?cursor=${encodeURIComponent(page1.body.nextCursor)}`, {
      key: other.apiKey,
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toBe('invalid_cursor');
    expect((await client(h.apiUrl, other.apiKey).get('/webhook/deliveries')).body.deliveries).toEqual([]);
    for (const q of ['limit=0', 'limit=101']) {
      const bad = await api.get(`/webhook/deliveries?${q}`);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('invalid_input');
    }
    expect((await api.get('/webhook/deliveries?cursor=forged.cursor')).body.error).toBe('invalid_cursor');
  });
});

test('the webhook routes are in the OpenAPI document from the same schemas that parse them', async () => {
  const doc = (await call(`${h.apiUrl}/openapi.json`)).body;
  expect(Object.keys(doc.paths)).toEqual(
    expect.arrayContaining(
      ['/webhook', '/webhook/test', '/webhook/deliveries', '/webhook/deliveries/{id}/retry'].map(
        (p) => `/wholesale/v1${p}`,
      ),
    ),
  );
  expect(doc.paths['/wholesale/v1/webhook'].put.responses['200'].content['application/json'].schema).toBeDefined();
  expect(doc.components.schemas.WebhookDelivery.required).toEqual(
    expect.arrayContaining([
      'id',
      'eventId',
      'event',
      'status',
      'attempts',
      'lastStatusCode',
      'lastError',
      'nextAttemptAt',
      'createdAt',
      'updatedAt',
    ]),
  );
});
