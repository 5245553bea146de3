import { procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { startHarness, type Harness } from '../helpers/harness';
import { expectLedgerMatchesBalance } from '../helpers/money';
import {
  adminApi,
  eventsOfOrder,
  fulfillmentIs,
  historyText,
  orderUntil,
  procurementState,
  reseller,
  storedCodes,
} from '../helpers/procurement';
import { FAKE_CLIENT_SECRET, FakeReloadly, type Fault, type OrderFate, type Route } from '../fakes/reloadly';

// Issue 26 item 1 and item 2's recording: SUPPLIER_PROVIDER=reloadly runs the real procurement
// workflow (spec 3.1, 3.2) against the contract fake of Reloadly's API. Whatever Reloadly does
// (pending, 5xx, an expired token, a rate limit, a refusal, garbage, a lost answer), the order
// ends delivered with exactly the cards Reloadly sold, each bought once, or in needs_attention with
// Reloadly's reason; the balance and ledger hold what the reseller paid, and supplier_purchases
// what each purchase cost us. Rounds back off 1 s doubling to 2 s; needs_attention after 4.

const ADMIN_TOKEN = 'admin-token-for-reloadly-tests';
const MAPPING = {
  prod_apple_gift_card_us_10: { productId: 5, unitPrice: 10 },
  prod_apple_gift_card_us_25: { productId: 5, unitPrice: '25.00' },
  prod_apple_gift_card_us_50: { productId: 5, unitPrice: 50 },
  prod_roblox_gift_card_us_10: { productId: 18, unitPrice: 10 },
  prod_roblox_gift_card_us_25: { productId: 18, unitPrice: 25 },
  prod_roblox_gift_card_us_50: { productId: 18, unitPrice: 50 },
};
/** Our Lv1 prices (src/db/seed.ts). */
const LV1: Record<string, number> = {
  prod_apple_gift_card_us_10: 9.85,
  prod_apple_gift_card_us_25: 24.5,
  prod_apple_gift_card_us_50: 48.8,
  prod_roblox_gift_card_us_10: 9.9,
  prod_roblox_gift_card_us_25: 24.6,
  prod_roblox_gift_card_us_50: 49,
};

let fake: FakeReloadly;
let h: Harness;

beforeAll(async () => {
  fake = await FakeReloadly.start();
  h = await startHarness({
    ...fake.env(MAPPING, { RELOADLY_TIMEOUT_MS: '1000' }),
    ADMIN_TOKEN,
    RATE_LIMIT_PER_MINUTE: '100000',
    PROCUREMENT_RETRY_BASE_SECONDS: '1',
    PROCUREMENT_RETRY_CAP_SECONDS: '2',
    PROCUREMENT_MAX_ROUNDS: '4',
    PROCUREMENT_DEADLINE_SECONDS: '120',
  });
});
afterAll(async () => {
  await h?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

async function purchasesOf(orderId: string) {
  return h.services.orm.em.fork().execute<Record<string, any>[]>(
    `select idempotency_key, supplier, supplier_product_id, state, transaction_id, supplier_status, requested, quantity, units,
            unit_cost, total_cost, currency, face_value, face_currency, error
       from supplier_purchases where order_id = ? order by id`,
    [orderId],
  );
}

const cents = (n: number) => Math.round(n * 100);
const decimal = (c: number) => (c / 100).toFixed(2);

/** Places a balance-paid order for `qty` units: the ledger debits qty × Lv1 at once (spec 3.1). */
async function place(externalOrderId: string, productId: string, qty: number) {
  const r = await reseller(h, '200.00');
  const placed = await r.api.post('/orders', { externalOrderId, productId, qty, payment: 'balance' });
  expect(placed.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing', codes: [] });
  return { ...r, orderId: placed.body.orderId as string, paid: cents(LV1[productId]) * qty };
}

/** What the reseller paid is all the ledger holds, and it agrees with the balance. */
async function expectPaidOnce(accountId: string, orderId: string, paid: number) {
  const l = await expectLedgerMatchesBalance(h, accountId);
  expect(l.rows.map((r) => [r.type, r.amount, r.order_id])).toEqual([
    ['adjust', '200.00', null],
    ['purchase', `-${decimal(paid)}`, orderId],
  ]);
  expect(l.balance).toBe(decimal(cents(200) - paid));
}

interface DeliveredCase {
  name: string;
  product: string;
  qty: number;
  faults?: [Route, ...Fault[]][];
  fates?: OrderFate[];
  /** Procurement rounds until delivered. */
  rounds: number;
  check?: (orderId: string) => Promise<void> | void;
}

describe('delivered (spec 3.1): the cards Reloadly sold, bought once, their cost recorded', () => {
  const cases: DeliveredCase[] = [
    { name: 'full delivery in one round', product: 'prod_apple_gift_card_us_10', qty: 3, rounds: 1 },
    {
      name: 'pending, then successful: asked again under the same identifier',
      product: 'prod_roblox_gift_card_us_25',
      qty: 2,
      fates: [{ pendingReads: 2 }],
      rounds: 3,
    },
    {
      name: '5xx once: asked again under the same identifier, one purchase',
      product: 'prod_apple_gift_card_us_25',
      qty: 1,
      faults: [['order', { kind: 'server_error', status: 503 }]],
      rounds: 2,
    },
    {
      name: '401 with an expired token: one renewal, one round',
      product: 'prod_apple_gift_card_us_50',
      qty: 1,
      faults: [['order', { kind: 'token_expired' }]],
      rounds: 1,
      check: () => {
        const seen = fake.calls
          .filter((x) => x.route === 'order' || x.route === 'token')
          .map((x) => `${x.route} ${x.status}`);
        expect(seen.slice(-3)).toEqual(['order 401', 'token 200', 'order 200']);
        expect(seen.filter((x) => x === 'order 401')).toHaveLength(1);
      },
    },
    {
      name: '429 with Retry-After: 2: the order is sent again no sooner than 2 s later, in the same round',
      product: 'prod_roblox_gift_card_us_10',
      qty: 1,
      faults: [['order', { kind: 'rate_limited', retryAfterSeconds: 2 }]],
      rounds: 1,
      check: () => {
        const [limited, placed] = fake.callsTo('order');
        expect([limited.status, placed.status]).toEqual([429, 200]);
        expect(placed.at - limited.at).toBeGreaterThanOrEqual(2000);
      },
    },
    {
      name: 'garbage answers (to the order and to its lookup): no crash, asked again, one purchase',
      product: 'prod_apple_gift_card_us_10',
      qty: 2,
      faults: [
        ['order', { kind: 'garbage' }],
        ['report', { kind: 'garbage' }],
      ],
      rounds: 2,
    },
    {
      name: 'a lost answer (taken, connection dropped, not yet in the report): the repeat is refused as CUSTOM_IDENTIFIER_ALREADY_USED, looked up, the same cards',
      product: 'prod_roblox_gift_card_us_50',
      qty: 2,
      faults: [
        ['order', { kind: 'drop_after_taking' }],
        ['report', { kind: 'stale' }],
      ],
      rounds: 2,
      check: () => expect(fake.callsTo('order').map((c) => c.status)).toEqual(['dropped', 400]),
    },
  ];

  test.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    for (const [route, ...faults] of c.faults ?? []) fake.fail(route, ...faults);
    fake.nextOrders(...(c.fates ?? []));
    const { api, accountId, orderId, paid } = await place(`rl-${c.product}-${c.rounds}-${c.qty}`, c.product, c.qty);

    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered');
    expect(delivered).toMatchObject({
      fulfillmentStatus: 'delivered',
      fulfilledQuantity: c.qty,
      errorCode: null,
      redeemUrl: null,
    });

    // Exactly one purchase, and the order holds exactly its cards, a PIN kept as "<card> PIN <pin>".
    const bought = fake.ordersFor(`${orderId}:`);
    expect(bought).toHaveLength(1);
    const [tx] = bought;
    expect(tx).toMatchObject({
      productId: MAPPING[c.product as keyof typeof MAPPING].productId,
      quantity: c.qty,
      unitPrice: Number(MAPPING[c.product as keyof typeof MAPPING].unitPrice),
    });
    expect(delivered.codes).toEqual(FakeReloadly.codesOf(tx));
    const pin = c.product.startsWith('prod_roblox');
    for (const code of delivered.codes) expect(code).toMatch(pin ? /^\d{19} PIN \d{4}$/ : /^\d{16}$/);
    expect((await storedCodes(h, orderId)).map((s) => s.code)).toEqual(delivered.codes);
    expect((await eventsOfOrder(h, orderId)).map((e) => e.type)).toEqual(['order.delivered']);
    expect(await procurementState(h, orderId)).toMatchObject({ phase: 'delivered', rounds: c.rounds });

    // What it cost us, beside the order.
    const product = fake.products.find((p) => p.productId === tx.productId)!;
    expect(await purchasesOf(orderId)).toEqual([
      {
        idempotency_key: tx.customIdentifier,
        supplier: 'reloadly',
        supplier_product_id: String(tx.productId),
        state: 'completed',
        transaction_id: String(tx.transactionId),
        supplier_status: 'SUCCESSFUL',
        requested: c.qty,
        quantity: c.qty,
        units: c.qty,
        total_cost: tx.amount.toFixed(6),
        unit_cost: (tx.amount / c.qty).toFixed(6),
        currency: 'USD',
        face_value: tx.unitPrice.toFixed(2),
        face_currency: product.currencyCode,
        error: null,
      },
    ]);
    await expectPaidOnce(accountId, orderId, paid);
    await c.check?.(orderId);
  });

  test('support sees what was bought and what it cost; neither the client secret, a token nor a card is in the history', async () => {
    const { api, orderId } = await place('rl-support-view', 'prod_roblox_gift_card_us_10', 2);
    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered');
    const [tx] = fake.ordersFor(`${orderId}:`);
    const detail = await adminApi(h, ADMIN_TOKEN).get(`/orders/${orderId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.supplierPurchases).toEqual([
      expect.objectContaining({
        supplier: 'reloadly',
        transactionId: String(tx.transactionId),
        state: 'completed',
        supplierStatus: 'SUCCESSFUL',
        quantity: 2,
        units: 2,
        unitCost: (tx.amount / 2).toFixed(6),
        totalCost: tx.amount.toFixed(6),
        currency: 'USD',
        faceValue: '10.00',
        faceCurrency: 'USD',
      }),
    ]);
    const history = await historyText(h, procurementWorkflowId(orderId));
    expect(history).toContain('obtained');
    expect(history).not.toContain(FAKE_CLIENT_SECRET);
    expect(history).not.toMatch(/eyJfake\./);
    for (const code of delivered.codes) {
      expect(history).not.toContain(code);
      expect(history).not.toContain(code.split(' PIN ')[0]);
    }
  });
});

describe("needs_attention (spec 3.2) with Reloadly's reason kept for support", () => {
  test.each<[string, () => void, RegExp, string | null]>([
    [
      'the transaction FAILED',
      () => fake.nextOrders({ status: 'FAILED' }),
      /Reloadly transaction \d+ FAILED: no cards were delivered/,
      'failed',
    ],
    [
      'insufficient balance at Reloadly',
      () => (fake.balance = 5),
      /Reloadly refused the order: Insufficient balance.*\(INSUFFICIENT_BALANCE\)/,
      null,
    ],
  ])('%s', async (_name, arrange, reason, recorded) => {
    const balance = fake.balance;
    arrange();
    try {
      const { api, accountId, orderId, paid } = await place(
        `rl-attention-${recorded ?? 'refused'}`,
        'prod_apple_gift_card_us_50',
        1,
      );
      const stuck = await orderUntil(api, orderId, fulfillmentIs('needs_attention'));
      expect(stuck).toMatchObject({
        status: 'paid',
        errorCode: 'delivery_needs_attention',
        resolution: 'manual_review',
        fulfilledQuantity: 0,
        codes: [],
      });
      // A refusal is definite: no round after it.
      expect(await procurementState(h, orderId)).toMatchObject({
        phase: 'needs_attention',
        rounds: 1,
        lastSupplierError: expect.stringMatching(reason),
      });
      expect((await eventsOfOrder(h, orderId)).map((e) => e.type)).toEqual(['order.delivery_attention']);
      const purchases = await purchasesOf(orderId);
      if (recorded) {
        const [tx] = fake.ordersFor(`${orderId}:`);
        expect(purchases).toEqual([
          expect.objectContaining({
            state: recorded,
            transaction_id: String(tx.transactionId),
            supplier_status: 'FAILED',
            units: 0,
            error: expect.stringMatching(reason),
          }),
        ]);
      } else {
        expect(fake.ordersFor(`${orderId}:`)).toHaveLength(0);
        expect(purchases).toEqual([]);
      }
      // The reseller has paid; support decides on the refund.
      await expectPaidOnce(accountId, orderId, paid);
    } finally {
      fake.balance = balance;
    }
  });
});
