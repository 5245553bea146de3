import { payCheckout, resetSandboxControl } from '../../src/providers/sandbox/sandbox-payments';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV, payThroughPage } from '../helpers/payments';
import { startReceiver, verifySignature, type Receiver, type Received } from '../helpers/webhook-receiver';

// Issue 5, item 5: the events that exist are delivered through the one outbox path, with the
// payloads of spec part 6: order.delivered for balance, intent and late-paid intent orders, and
// topup.credited for a paid top-up.
let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({ ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '5', WEBHOOK_ALLOW_INSECURE_URLS: 'true' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});
beforeEach(() => resetSandboxControl());

async function subscriber(balance = '0') {
  const a = await h.account(balance);
  const api = client(h.apiUrl, a.apiKey);
  const { secret } = (await api.put('/webhook', { url: receiver.url })).body;
  return { ...a, api, secret: secret as string };
}

/** The one delivery of `event` about `orderId`, checked for a valid signature and matching headers. */
async function deliveredEvent(event: string, orderId: string, secret: string): Promise<Received> {
  const [got] = await receiver.waitFor(1, (all) =>
    all.filter((r) => r.body?.event === event && r.body?.orderId === orderId),
  );
  expect(verifySignature(secret, got.raw, got.headers['x-wholesale-signature'])).toBe(true);
  expect(got.headers['x-wholesale-event-id']).toBe(got.body.eventId);
  expect(got.headers['x-wholesale-timestamp']).toBe(String(got.body.timestamp));
  return got;
}

const orderDeliveredBody = (
  order: { orderId: string },
  externalOrderId: string,
  codes: string[],
  redeemUrl: string | null,
) => ({
  eventId: expect.stringMatching(/^evt_/),
  event: 'order.delivered',
  timestamp: expect.any(Number),
  orderId: order.orderId,
  externalOrderId,
  productId: 'prod_chatgpt_plus_1m',
  qty: 1,
  codes,
  redeemUrl,
  deliveryType: 'redemption',
});

async function waitForStatus(api: ReturnType<typeof client>, orderId: string, status: string) {
  return eventually(async () => {
    const res = await api.get(`/orders/${orderId}`);
    return res.body.status === status ? res.body : undefined;
  });
}

test('topup.credited: a paid top-up is delivered with orderId, externalTopupId, amount and currency', async () => {
  const { api, accountId, secret } = await subscriber();
  const res = await api.post('/topup', { externalTopupId: 'wh-top-1', amount: '12.50', currency: 'USDC' });
  expect(res.status).toBe(200);
  await payThroughPage(res.body.checkoutUrl);
  const got = await deliveredEvent('topup.credited', res.body.orderId, secret);
  expect(got.body).toEqual({
    eventId: expect.stringMatching(/^evt_/),
    event: 'topup.credited',
    timestamp: expect.any(Number),
    orderId: res.body.orderId,
    externalTopupId: 'wh-top-1',
    amount: '12.50',
    currency: 'USDC',
  });
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('12.50');
});

test('order.delivered for an intent order paid at the checkout', async () => {
  const { api, accountId, secret } = await subscriber();
  const res = await api.post('/orders', {
    externalOrderId: 'wh-intent-1',
    productId: 'prod_chatgpt_plus_1m',
    qty: 1,
    payment: 'intent',
  });
  expect(res.body.status).toBe('pending');
  await payThroughPage(res.body.checkoutUrl);
  const delivered = await waitForStatus(api, res.body.orderId, 'delivered');
  const got = await deliveredEvent('order.delivered', res.body.orderId, secret);
  expect(got.body).toEqual(orderDeliveredBody(res.body, 'wh-intent-1', delivered.codes, delivered.redeemUrl));
  await expectLedgerMatchesBalance(h, accountId);
});

test('order.delivered for an intent order paid after it expired (late payment)', async () => {
  const { api, accountId, secret } = await subscriber();
  const res = await api.post('/orders', {
    externalOrderId: 'wh-late-1',
    productId: 'prod_chatgpt_plus_1m',
    qty: 1,
    payment: 'intent',
  });
  await waitForStatus(api, res.body.orderId, 'expired');
  await payCheckout(h.services.orm.em.fork(), h.config.PAYMENT_CALLBACK_SECRET, checkoutIdOf(res.body.checkoutUrl));
  const delivered = await waitForStatus(api, res.body.orderId, 'delivered');
  const got = await deliveredEvent('order.delivered', res.body.orderId, secret);
  expect(got.body).toEqual(orderDeliveredBody(res.body, 'wh-late-1', delivered.codes, delivered.redeemUrl));
  await expectLedgerMatchesBalance(h, accountId);
});

test('order.delivered for a balance order, and each event is delivered once', async () => {
  const { api, accountId, secret } = await subscriber('20.00');
  const res = await api.post('/orders', { externalOrderId: 'wh-balance-1', productId: 'prod_chatgpt_plus_1m', qty: 1 });
  expect(res.body.status).toBe('delivered');
  const got = await deliveredEvent('order.delivered', res.body.orderId, secret);
  expect(got.body).toEqual(orderDeliveredBody(res.body, 'wh-balance-1', res.body.codes, res.body.redeemUrl));
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('2.00');

  const ids = receiver.received.map((r) => r.headers['x-wholesale-event-id']);
  expect(new Set(ids).size).toBe(ids.length);
});
