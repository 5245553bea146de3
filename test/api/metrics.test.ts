import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV, sendCallback } from '../helpers/payments';
import { orderUntil, fulfillmentIs } from '../helpers/procurement';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// Issue 16: GET /metrics, parsed with a real Prometheus text parser, after a scripted run: every
// counter and gauge the run touches moves by exactly what the run did.
let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    PAYMENT_WINDOW_SECONDS: '600',
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    WEBHOOK_RETRY_BASE_SECONDS: '1',
    WEBHOOK_RETRY_CAP_SECONDS: '1',
    TOPUP_RATE_LIMIT_PER_HOUR: '2',
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  sandboxSupplierControl.reset();
  await receiver?.close();
  await h?.stop();
});

type Sample = { name: string; labels: Record<string, string>; value: number };

let lastText = '';

async function scrape(): Promise<Sample[]> {
  const res = await fetch(`${h.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  lastText = await res.text();
  const families = parsePrometheusTextFormat(lastText);
  // Counters and gauges as samples (the parser keeps no labels on histogram families).
  return families
    .filter((f) => f.type === 'COUNTER' || f.type === 'GAUGE')
    .flatMap((f) => f.metrics.map((m) => ({ name: f.name, labels: m.labels ?? {}, value: Number(m.value ?? 0) })));
}

/** The value of one series (0 when absent), matching the given labels. */
const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);

/** A histogram's observation count for one label value, from the exposition text. */
const histogramCount = (text: string, name: string, label: string, labelValue: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith(`${name}_count{`) && line.includes(`${label}="${labelValue}"`))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);

test('a scripted run moves the counters and gauges by exactly what it did', async () => {
  const before = await scrape();
  const beforeText = lastText;
  const buyer = await h.account('1.00');
  const api = client(h.apiUrl, buyer.apiKey);

  // A balance order, and one refused for the balance.
  expect(
    (await api.post('/orders', { externalOrderId: 'm-bal', productId: 'prod_api_order_test', qty: 1 })).body.status,
  ).toBe('delivered');
  expect(
    (await api.post('/orders', { externalOrderId: 'm-poor', productId: 'prod_chatgpt_plus_1m', qty: 1 })).body.error,
  ).toBe('insufficient_balance');
  // A replay is not a second placement.
  expect(
    (await api.post('/orders', { externalOrderId: 'm-bal', productId: 'prod_api_order_test', qty: 1 })).body.reused,
  ).toBe(true);

  // An intent order, paid through the provider's callback.
  const intent = await api.post('/orders', {
    externalOrderId: 'm-intent',
    productId: 'prod_chatgpt_plus_1m',
    qty: 1,
    payment: 'intent',
  });
  expect(intent.body.status).toBe('pending');
  const mid = await scrape();
  expect(value(mid, 'wholesale_pending_intent_orders') - value(before, 'wholesale_pending_intent_orders')).toBe(1);
  expect((await sendCallback(h, checkoutIdOf(intent.body.checkoutUrl), intent.body.orderId)).status).toBe(200);
  await orderUntil(api, intent.body.orderId, (o) => o.status === 'delivered');

  // Two top-ups (one paid), then the third within the hour is over the quota of 2.
  const top = await api.post('/topup', { externalTopupId: 'm-top-1', amount: '5.00' });
  expect((await api.post('/topup', { externalTopupId: 'm-top-2', amount: '6.00', currency: 'USDC' })).status).toBe(200);
  expect((await api.post('/topup', { externalTopupId: 'm-top-3', amount: '7.00' })).status).toBe(429);
  expect((await sendCallback(h, checkoutIdOf(top.body.checkoutUrl), top.body.orderId)).status).toBe(200);
  await eventually(async () => (await api.get('/balance')).body.balance === '5.99');

  // A gift card the supplier refuses outright: needs_attention at once.
  sandboxSupplierControl.script('prod_roblox_gift_card_us_10', { then: 'permanent' });
  const gifts = await h.account('50.00');
  const giftApi = client(h.apiUrl, gifts.apiKey);
  const gift = await giftApi.post('/orders', {
    externalOrderId: 'm-gift',
    productId: 'prod_roblox_gift_card_us_10',
    qty: 1,
  });
  await orderUntil(giftApi, gift.body.orderId, fulfillmentIs('needs_attention'));

  // A webhook that fails once, then succeeds (its own account, so no other event is delivered there).
  const hooked = await h.account('0');
  const hookApi = client(h.apiUrl, hooked.apiKey);
  await hookApi.put('/webhook', { url: receiver.url });
  receiver.script([500]);
  const { deliveryId } = (await hookApi.post('/webhook/test', {})).body;
  await eventually(
    async () =>
      (await hookApi.get('/webhook/deliveries')).body.deliveries.find((d: any) => d.id === deliveryId)?.status ===
      'succeeded',
    30_000,
  );

  const after = await eventually(async () => {
    const s = await scrape();
    return value(s, 'wholesale_pending_intent_orders') === value(before, 'wholesale_pending_intent_orders')
      ? s
      : undefined;
  });
  const delta = (name: string, labels: Record<string, string> = {}) =>
    value(after, name, labels) - value(before, name, labels);
  const placements = (payment: string) =>
    histogramCount(lastText, 'wholesale_order_placement_seconds', 'payment', payment) -
    histogramCount(beforeText, 'wholesale_order_placement_seconds', 'payment', payment);

  expect({
    balanceDelivered: delta('wholesale_orders_placed_total', {
      product_type: 'redemption',
      payment: 'balance',
      outcome: 'delivered',
    }),
    rejectedForBalance: delta('wholesale_orders_placed_total', { outcome: 'rejected', code: 'insufficient_balance' }),
    intentPending: delta('wholesale_orders_placed_total', {
      product_type: 'redemption',
      payment: 'intent',
      outcome: 'pending',
    }),
    giftPaid: delta('wholesale_orders_placed_total', {
      product_type: 'direct_code',
      payment: 'balance',
      outcome: 'paid',
    }),
    allPlacements: delta('wholesale_orders_placed_total'),
    // Timed in the worker: the delivered one, the one refused for balance, the gift card; the
    // replay is answered by the API from Postgres and never reaches a placement.
    placementsTimedBalance: placements('balance'),
    placementsTimedIntent: placements('intent'),
    orderConfirmedByCallback: delta('wholesale_payment_confirmations_total', { path: 'callback', kind: 'order' }),
    topupConfirmedByCallback: delta('wholesale_payment_confirmations_total', { path: 'callback', kind: 'topup' }),
    topupsCreated: delta('wholesale_topups_created_total'),
    topupsCreatedUsdc: delta('wholesale_topups_created_total', { currency: 'USDC' }),
    topupsCredited: delta('wholesale_topups_credited_total', { currency: 'USDT' }),
    topupQuota429: delta('wholesale_rate_limited_total', { limit: 'topups' }),
    permanentRounds: delta('wholesale_procurement_rounds_total', { outcome: 'permanent' }),
    unitsObtained: delta('wholesale_procurement_units_total'),
    webhookFailed: delta('wholesale_webhook_attempts_total', { outcome: 'failed' }),
    webhookSucceeded: delta('wholesale_webhook_attempts_total', { outcome: 'succeeded' }),
    needsAttention: delta('wholesale_orders_needs_attention'),
    pendingTopups: delta('wholesale_pending_topups'),
    ordersPost200: delta('wholesale_http_requests_total', {
      route: '/wholesale/v1/orders',
      method: 'POST',
      status: '200',
    }),
    ordersPost402: delta('wholesale_http_requests_total', {
      route: '/wholesale/v1/orders',
      method: 'POST',
      status: '402',
    }),
  }).toEqual({
    balanceDelivered: 1,
    rejectedForBalance: 1,
    intentPending: 1,
    giftPaid: 1,
    allPlacements: 4,
    placementsTimedBalance: 3,
    placementsTimedIntent: 1,
    orderConfirmedByCallback: 1,
    topupConfirmedByCallback: 1,
    topupsCreated: 2,
    topupsCreatedUsdc: 1,
    topupsCredited: 1,
    topupQuota429: 1,
    permanentRounds: 1,
    unitsObtained: 0,
    webhookFailed: 1,
    webhookSucceeded: 1,
    needsAttention: 1,
    pendingTopups: 1,
    ordersPost200: 4,
    ordersPost402: 1,
  });
  // Latency is recorded per route template, and labels never hold an id.
  const latency =
    /wholesale_http_request_duration_seconds_count\{[^}]*route="\/wholesale\/v1\/orders\/:id",method="GET"[^}]*\} (\d+)/.exec(
      lastText,
    );
  expect(Number(latency?.[1])).toBeGreaterThan(0);
  for (const s of after) {
    for (const v of Object.values(s.labels)) expect(v).not.toMatch(/ord_|[0-9a-f]{8}-[0-9a-f]{4}-|wsk_/);
  }
  expect(value(after, 'wholesale_metrics_state_up')).toBe(1);
  expect(value(after, 'wholesale_worker_up')).toBe(1);
  // The money of the run, where it lives.
  expect((await expectLedgerMatchesBalance(h, buyer.accountId)).balance).toBe('5.99');
}, 180_000);
