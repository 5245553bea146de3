import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Runtime } from '@temporalio/worker';
import { marginTable } from '../../src/cli-reports';
import { payCheckout } from '../../src/providers/sandbox/sandbox-payments';
import { syncSupplierCatalog } from '../../src/services/supply/supplier-costs';
import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV } from '../helpers/payments';
import { adminApi, orderUntil, reseller, supportActionsOf, wholesale } from '../helpers/procurement';
import { FakeReloadly, type FakeTransaction, type OrderFate } from '../fakes/reloadly';

// Issue 26 item 2, "what each product costs us", with SUPPLIER_PROVIDER=reloadly against the
// contract fake: the catalog names each direct-code product's supplier; a purchase above our Lv1
// price raises wholesale_supplier_price_above_lv1 and one warn line, and is still delivered (the
// cards are bought and paid for when Reloadly tells the price); a support refund says what was
// bought and what was not; and the margin report (CLI and admin API) equals a hand sum of the
// orders this file placed and the purchases Reloadly made for them. The file owns its database, so
// the report covers exactly those orders.

const ADMIN_TOKEN = 'admin-token-for-margin-tests';
const MAPPING = {
  prod_apple_gift_card_us_10: { productId: 5, unitPrice: 10 },
  prod_apple_gift_card_us_25: { productId: 5, unitPrice: 25 },
  prod_apple_gift_card_us_50: { productId: 5, unitPrice: 50 },
  prod_roblox_gift_card_us_10: { productId: 18, unitPrice: 10 },
  prod_roblox_gift_card_us_50: { productId: 18, unitPrice: 50 },
};
const ABOVE_LV1 = 'supplier price above our Lv1 price: this product sells at a loss';

let fake: FakeReloadly;
let h: Harness;

beforeAll(async () => {
  fake = await FakeReloadly.start();
  h = await startHarness({
    ...fake.env(MAPPING, { RELOADLY_TIMEOUT_MS: '1000' }),
    ...PAYMENT_ENV,
    ADMIN_TOKEN,
    RATE_LIMIT_PER_MINUTE: '100000',
    PROCUREMENT_RETRY_BASE_SECONDS: '1',
    PROCUREMENT_RETRY_CAP_SECONDS: '1',
    PROCUREMENT_MAX_ROUNDS: '4',
    PROCUREMENT_DEADLINE_SECONDS: '120',
  });
  // The harness seeds the catalog after the service has started: the start-up sync runs again, as
  // the next start would.
  await syncSupplierCatalog(h.services.orm.em.fork(), h.config);
});
afterAll(async () => {
  await h?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

const admin = () => adminApi(h, ADMIN_TOKEN);

/** Every order this file had paid, with what the reseller paid and got back: the hand sum's input. */
interface Placed {
  orderId: string;
  productId: string;
  qty: number;
  /** What the order cost the reseller (the placement's answer). */
  amount: string;
  /** Credited back by a support refund. */
  refunded: string;
  /** Units whose codes the reseller got. */
  delivered: number;
}
const placed: Placed[] = [];

/** Places an order (paid from the balance, or at the sandbox checkout) and waits until procurement ends. */
async function buy(
  externalOrderId: string,
  productId: string,
  qty: number,
  opts: { fates?: OrderFate[]; payment?: 'balance' | 'intent' } = {},
) {
  fake.nextOrders(...(opts.fates ?? []));
  const r = await reseller(h, opts.payment === 'intent' ? '0' : '200.00');
  const res = await r.api.post('/orders', { externalOrderId, productId, qty, payment: opts.payment ?? 'balance' });
  expect(res.status).toBe(200);
  const orderId = res.body.orderId as string;
  if (opts.payment === 'intent') {
    const paid = await payCheckout(
      h.services.orm.em.fork(),
      h.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(res.body.checkoutUrl),
    );
    await paid!.callback;
  }
  const order = await orderUntil(
    r.api,
    orderId,
    (o) => o.status === 'delivered' || o.fulfillmentStatus === 'needs_attention',
  );
  const record: Placed = {
    orderId,
    productId,
    qty,
    amount: res.body.amount,
    refunded: '0.00',
    delivered: order.status === 'delivered' ? qty : 0,
  };
  placed.push(record);
  return { ...r, orderId, order, record, bought: fake.ordersFor(`${orderId}:`) };
}

type Sample = { name: string; labels: Record<string, string>; value: number };
async function gauge(productId: string): Promise<number | undefined> {
  const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
  const samples: Sample[] = parsePrometheusTextFormat(text)
    .filter((f) => f.type === 'GAUGE')
    .flatMap((f) => f.metrics.map((m) => ({ name: f.name, labels: m.labels ?? {}, value: Number(m.value ?? 0) })));
  return samples.find((s) => s.name === 'wholesale_supplier_price_above_lv1' && s.labels.product === productId)?.value;
}

const micros = (n: number) => BigInt(Math.round(n * 1_000_000));
const fromMicros = (m: bigint, places: 2 | 6 = 6) => {
  const s = (m < 0n ? -m : m).toString().padStart(7, '0');
  const d = `${m < 0n ? '-' : ''}${s.slice(0, -6)}.${s.slice(-6)}`;
  return places === 2 ? d.slice(0, d.length - 4) : d;
};
const decimalMicros = (d: string) => micros(Number(d));
const unitCost = (tx: FakeTransaction) =>
  fromMicros((micros(tx.amount) * 2n + BigInt(tx.quantity)) / (2n * BigInt(tx.quantity)));

test('the catalog names the supplier and its product id of each direct-code product, from RELOADLY_PRODUCTS', async () => {
  const out = await wholesale(h, 'products', 'list');
  expect(out.exitCode).toBe(0);
  const byId = new Map(out.json.map((p: any) => [p.id, p]));
  expect(byId.get('prod_apple_gift_card_us_25')).toMatchObject({ supplier: 'reloadly', supplierProductId: '5' });
  expect(byId.get('prod_roblox_gift_card_us_50')).toMatchObject({ supplier: 'reloadly', supplierProductId: '18' });
  // Not in RELOADLY_PRODUCTS: nobody supplies it. Not a direct-code product: not supplied at all.
  expect(byId.get('prod_robux_400')).toMatchObject({ supplier: null, supplierProductId: null });
  expect(byId.get('prod_chatgpt_plus_1m')).toMatchObject({ supplier: null, supplierProductId: null });
});

test('a supplier price above our Lv1 price is flagged (metric and one warn line of ids and prices) and the order is still delivered; a cheaper purchase clears the flag', async () => {
  const warn = jest.spyOn(Runtime.instance().logger, 'warn');
  try {
    // One $10 card costs 10 × 0.97 + 0.50 fee = 10.20 USD, above its Lv1 price of 9.85 USDT.
    const dear = await buy('margin-dear', 'prod_apple_gift_card_us_10', 1);
    expect(dear.order).toMatchObject({ status: 'delivered', fulfilledQuantity: 1 });
    const [tx] = dear.bought;
    expect(unitCost(tx)).toBe('10.200000');
    await eventually(async () => (await gauge('prod_apple_gift_card_us_10')) === 1);
    const lines = () => warn.mock.calls.filter(([message]) => message === ABOVE_LV1);
    await eventually(async () => lines().length === 1);
    const [, meta] = lines()[0];
    expect(meta).toMatchObject({
      productId: 'prod_apple_gift_card_us_10',
      supplier: 'reloadly',
      supplierProductId: '5',
      transactionId: String(tx.transactionId),
      unitCost: '10.200000',
      costCurrency: 'USD',
      lv1Price: '9.85',
      currency: 'USDT',
    });
    for (const code of dear.order.codes) expect(JSON.stringify(meta)).not.toContain(code);
    await expectLedgerMatchesBalance(h, dear.accountId);

    // Ten cards spread the fee: 97.50 / 10 = 9.75 USD each, under 9.85.
    const cheap = await buy('margin-cheap', 'prod_apple_gift_card_us_10', 10);
    expect(cheap.order).toMatchObject({ status: 'delivered', fulfilledQuantity: 10 });
    expect(unitCost(cheap.bought[0])).toBe('9.750000');
    await eventually(async () => (await gauge('prod_apple_gift_card_us_10')) === 0);
    expect(lines()).toHaveLength(1);
  } finally {
    warn.mockRestore();
  }
});

test('a support refund says what was bought and what was not: codes delivered against units ordered, each purchase with its transaction', async () => {
  // Reloadly sells 3 cards but hands over 2; the purchase of the third fails: needs_attention.
  const stuck = await buy('margin-partial', 'prod_apple_gift_card_us_25', 3, {
    fates: [{ cardsShort: 1 }, { status: 'FAILED' }],
  });
  expect(stuck.order).toMatchObject({
    status: 'paid',
    fulfillmentStatus: 'needs_attention',
    fulfilledQuantity: 2,
    codes: [],
  });
  const [sold, failed] = stuck.bought;
  expect([sold.fate.status, sold.quantity, failed.fate.status, failed.quantity]).toEqual([
    'SUCCESSFUL',
    3,
    'FAILED',
    1,
  ]);

  const res = await admin().post(`/orders/${stuck.orderId}/refund`, {
    actor: 'dave',
    reason: 'Reloadly failed the third card',
  });
  expect(res.status).toBe(200);
  const purchases = [
    {
      supplier: 'reloadly',
      transactionId: String(sold.transactionId),
      state: 'completed',
      quantity: 3,
      units: 2,
      unitCost: unitCost(sold),
      totalCost: sold.amount.toFixed(6),
      currency: 'USD',
    },
    {
      supplier: 'reloadly',
      transactionId: String(failed.transactionId),
      state: 'failed',
      quantity: 1,
      units: 0,
      unitCost: unitCost(failed),
      totalCost: failed.amount.toFixed(6),
      currency: 'USD',
    },
  ];
  expect(res.body).toMatchObject({
    action: 'refund',
    refund: { units: 1, amount: '24.50', requested: 3, delivered: 2, supplierPurchases: purchases },
    order: { status: 'refunded', fulfilledQuantity: 2 },
  });
  expect(await supportActionsOf(h, stuck.orderId)).toEqual([
    {
      action: 'refund',
      actor: 'dave',
      reason: 'Reloadly failed the third card',
      payload: { refundedUnits: 1, amount: '24.50', releasedCodes: 2, supplierPurchases: purchases },
    },
  ]);
  // The money: 3 × 24.50 paid, 1 × 24.50 back.
  const l = await expectLedgerMatchesBalance(h, stuck.accountId);
  expect(l.rows.map((r) => [r.type, r.amount, r.order_id])).toEqual([
    ['adjust', '200.00', null],
    ['purchase', '-73.50', stuck.orderId],
    ['refund', '24.50', stuck.orderId],
  ]);
  expect(l.balance).toBe('151.00');
  Object.assign(stuck.record, { refunded: '24.50', delivered: 2 });
});

test('the margin report (CLI and admin API) equals the hand sum of the orders paid in the period and their completed purchases', async () => {
  // More orders: paid at the checkout, sold at a loss, and refunded whole (Reloadly failed it).
  await buy('margin-intent', 'prod_apple_gift_card_us_50', 1, { payment: 'intent' });
  await buy('margin-roblox', 'prod_roblox_gift_card_us_50', 2);
  const refused = await buy('margin-failed', 'prod_roblox_gift_card_us_10', 2, { fates: [{ status: 'FAILED' }] });
  const refund = await admin().post(`/orders/${refused.orderId}/refund`, {
    actor: 'erin',
    reason: 'Reloadly failed it',
  });
  expect(refund.body.refund).toMatchObject({ units: 2, amount: '19.80', requested: 2, delivered: 0 });
  Object.assign(refused.record, { refunded: '19.80' });
  expect((await expectLedgerMatchesBalance(h, refused.accountId)).balance).toBe('200.00');
  // Placed and never paid: not revenue.
  const unpaid = await reseller(h, '0');
  expect(
    (
      await unpaid.api.post('/orders', {
        externalOrderId: 'margin-unpaid',
        productId: 'prod_apple_gift_card_us_25',
        qty: 1,
        payment: 'intent',
      })
    ).body.status,
  ).toBe('pending');

  // The hand sum: what each order's reseller paid and got back, and what Reloadly charged for the
  // purchases that went through (a failed one costs nothing).
  const byProduct = new Map<
    string,
    {
      orders: number;
      refundedOrders: number;
      units: number;
      revenue: bigint;
      purchases: number;
      cards: number;
      cost: bigint;
    }
  >();
  for (const o of placed) {
    const p = byProduct.get(o.productId) ?? {
      orders: 0,
      refundedOrders: 0,
      units: 0,
      revenue: 0n,
      purchases: 0,
      cards: 0,
      cost: 0n,
    };
    p.orders += 1;
    p.refundedOrders += o.refunded === '0.00' ? 0 : 1;
    p.units += o.delivered;
    p.revenue += decimalMicros(o.amount) - decimalMicros(o.refunded);
    for (const tx of fake.ordersFor(`${o.orderId}:`).filter((t) => t.fate.status === 'SUCCESSFUL')) {
      p.purchases += 1;
      p.cards += FakeReloadly.codesOf(tx).length;
      p.cost += micros(tx.amount);
    }
    byProduct.set(o.productId, p);
  }
  expect(placed).toHaveLength(6);
  const cost = (purchases: number, cards: number, amount: bigint) =>
    purchases ? [{ currency: 'USD', purchases, units: cards, amount: fromMicros(amount), unpriced: 0 }] : [];
  const products = [...byProduct.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([productId, p]) => ({
      productId,
      productName: expect.any(String),
      supplier: 'reloadly',
      supplierProductId: String(MAPPING[productId as keyof typeof MAPPING].productId),
      currency: 'USDT',
      orders: p.orders,
      refundedOrders: p.refundedOrders,
      openOrders: 0,
      units: p.units,
      revenue: fromMicros(p.revenue, 2),
      supplierCost: cost(p.purchases, p.cards, p.cost),
      margin: fromMicros(p.revenue - p.cost),
    }));
  const all = [...byProduct.values()].reduce(
    (t, p) => ({
      orders: t.orders + p.orders,
      units: t.units + p.units,
      revenue: t.revenue + p.revenue,
      purchases: t.purchases + p.purchases,
      cards: t.cards + p.cards,
      cost: t.cost + p.cost,
    }),
    { orders: 0, units: 0, revenue: 0n, purchases: 0, cards: 0, cost: 0n },
  );
  const totals = [
    {
      currency: 'USDT',
      orders: all.orders,
      units: all.units,
      revenue: fromMicros(all.revenue, 2),
      supplierCost: cost(all.purchases, all.cards, all.cost),
      margin: fromMicros(all.revenue - all.cost),
    },
  ];
  // Spot checks of the hand sum itself: a refunded-whole order is no revenue, and a loss shows.
  expect(products.find((p) => p.productId === 'prod_roblox_gift_card_us_10')).toMatchObject({
    revenue: '0.00',
    units: 0,
    supplierCost: [],
    margin: '0.000000',
  });
  expect(products.find((p) => p.productId === 'prod_apple_gift_card_us_50')).toMatchObject({
    revenue: '48.80',
    margin: '-0.200000',
  });

  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
  const period = { from: day(-1), to: day(2) };
  const cli = await wholesale(h, 'report', 'margins', '--from', period.from, '--to', period.to, '--json');
  expect(cli.exitCode).toBe(0);
  expect(cli.json).toEqual({ ...period, costAtPar: ['USD=USDT', 'USD=USDC'], products, totals });
  const api = await admin().get(`/reports/margins?from=${period.from}&to=${period.to}`);
  expect(api.status).toBe(200);
  expect(api.body).toEqual(cli.json);
  expect(marginTable(api.body)).toContain(`total USDT`);

  // Nothing was paid in a later period; a period must run forwards.
  const later = await admin().get(`/reports/margins?from=${period.to}&to=${day(3)}`);
  expect(later.body).toMatchObject({ products: [], totals: [] });
  const backwards = await admin().get(`/reports/margins?from=${period.to}&to=${period.from}`);
  expect([backwards.status, backwards.body.error]).toEqual([400, 'invalid_input']);
});
