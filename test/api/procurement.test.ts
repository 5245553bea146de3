import { payCheckout } from '../../src/providers/sandbox/sandbox-payments';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { paymentNotifiedSignal } from '../../src/contracts/payments-contract';
import { procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { FulfillmentStatusKey, OrderStatusKey } from '../../src/contracts/search-attributes';
import { startHarness, type Harness } from '../helpers/harness';
import { rawHistory, searchAttributePayloadsOf } from '../helpers/history';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV } from '../helpers/payments';
import {
  adminApi,
  eventsOfOrder,
  fulfillmentIs,
  historyText,
  orderUntil,
  procurementState,
  reseller,
  storedCodes,
  supplierPurchases,
  workflowIds,
} from '../helpers/procurement';

// Issue 6: direct-code gift cards are procured asynchronously (spec 2.4, 3.1, 3.2) by
// procurementWorkflow with the scriptable sandbox supplier, on real Postgres and Temporal.
// Rounds back off 1 s doubling to 2 s; needs_attention after 4 rounds.
let h: Harness;
const GIFT_CODE = /^GC-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}$/;

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    // Tests poll orders every 50 ms.
    RATE_LIMIT_PER_MINUTE: '100000',
    PROCUREMENT_RETRY_BASE_SECONDS: '1',
    PROCUREMENT_RETRY_CAP_SECONDS: '2',
    PROCUREMENT_MAX_ROUNDS: '4',
    PROCUREMENT_DEADLINE_SECONDS: '120',
  });
});
afterAll(() => h?.stop());
beforeEach(() => sandboxSupplierControl.reset());

const order = (externalOrderId: string, productId: string, qty: number, payment: 'balance' | 'intent' = 'balance') => ({
  externalOrderId,
  productId,
  qty,
  payment,
});

describe('delivery (spec 3.1: paid direct-code → delivered when the full quantity is obtained)', () => {
  test('full delivery in one round: all codes, order.delivered once, one purchase from the supplier', async () => {
    const { api, accountId } = await reseller(h, '50.00');
    const placed = await api.post('/orders', order('one-round', 'prod_apple_gift_card_us_10', 3));
    expect(placed.body).toMatchObject({
      status: 'paid',
      fulfillmentStatus: 'processing',
      codes: [],
      fulfilledQuantity: 0,
      redeemUrl: null,
    });
    const orderId = placed.body.orderId;

    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered');
    expect(delivered).toMatchObject({
      fulfillmentStatus: 'delivered',
      fulfilledQuantity: 3,
      errorCode: null,
      resolution: null,
      redeemUrl: null,
    });
    expect(delivered.codes).toHaveLength(3);
    for (const code of delivered.codes) expect(code).toMatch(GIFT_CODE);
    expect(await storedCodes(h, orderId)).toEqual(
      delivered.codes.map((code: string) => ({ code, kind: 'gift_card', is_test: false })),
    );

    const events = await eventsOfOrder(h, orderId);
    expect(events.map((e) => e.type)).toEqual(['order.delivered']);
    expect(events[0].payload).toEqual({
      orderId,
      externalOrderId: 'one-round',
      productId: 'prod_apple_gift_card_us_10',
      qty: 3,
      codes: delivered.codes,
      redeemUrl: null,
      deliveryType: 'direct_code',
    });
    const purchases = await supplierPurchases(h, orderId);
    expect(purchases.map((p) => [p.requested, p.codes.length])).toEqual([[3, 3]]);

    const state = await procurementState(h, orderId);
    expect(state).toMatchObject({
      phase: 'delivered',
      rounds: 1,
      remaining: 0,
      fulfilledQuantity: 3,
      lastSupplierError: null,
    });
    // Gift card codes pass from the supplier to Postgres inside the activity, never through history.
    const history = await historyText(h, procurementWorkflowId(orderId));
    expect(history).toContain('obtained'); // payloads are decoded: the round's outcome is there
    for (const code of delivered.codes) expect(history).not.toContain(code);
    const handle = h.services.temporal.client.workflow.getHandle(procurementWorkflowId(orderId));
    await eventually(async () => {
      const d = await handle.describe();
      return (
        d.status.name === 'COMPLETED' &&
        d.typedSearchAttributes.get(FulfillmentStatusKey) === 'delivered' &&
        d.typedSearchAttributes.get(OrderStatusKey) === 'delivered'
      );
    });
    // Only the procurement workflow carries FulfillmentStatus once the order is handed over.
    const orderRun = h.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'one-round'));
    await eventually(
      async () => (await orderRun.describe()).typedSearchAttributes.get(FulfillmentStatusKey) === undefined,
    );

    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.map((r) => [r.type, r.amount])).toEqual([
      ['adjust', '50.00'],
      ['purchase', '-29.55'],
    ]);
  });

  test('partial rounds: codes are stored as they arrive but withheld (codes [], fulfilledQuantity counting up) until the last', async () => {
    sandboxSupplierControl.script('prod_apple_gift_card_us_25', { steps: [1, 1], then: 'all' });
    const { api, accountId } = await reseller(h, '100.00');
    const placed = await api.post('/orders', order('partial', 'prod_apple_gift_card_us_25', 4));
    const orderId = placed.body.orderId;

    const seen: any[] = [];
    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered', { seen: (o) => seen.push(o) });
    const before = seen.filter((o) => o.status !== 'delivered');
    for (const o of before) expect(o).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing', codes: [] });
    const counts = before.map((o) => o.fulfilledQuantity);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(counts).toEqual(expect.arrayContaining([1, 2]));
    const summary = (await api.get('/orders?externalOrderId=partial')).body.orders[0];
    expect(summary).not.toHaveProperty('codes');

    // The supplier sold 1, 1, then the 2 still missing: the delivery is exactly what it sold.
    const purchases = await supplierPurchases(h, orderId);
    expect(purchases.map((p) => [p.requested, p.codes.length])).toEqual([
      [4, 1],
      [3, 1],
      [2, 2],
    ]);
    expect(delivered.codes).toEqual(purchases.flatMap((p) => p.codes));
    expect((await eventsOfOrder(h, orderId)).map((e) => e.type)).toEqual(['order.delivered']);
    expect(await procurementState(h, orderId)).toMatchObject({ phase: 'delivered', rounds: 3 });
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('2.00');
  });
});

describe('needs_attention (spec 3.2)', () => {
  test('after the round bound: errorCode and resolution set, exactly one order.delivery_attention, no partial codes', async () => {
    sandboxSupplierControl.script('prod_roblox_gift_card_us_10', { steps: [1], then: 'transient' });
    const { api, accountId } = await reseller(h, '40.00');
    const placed = await api.post('/orders', order('stuck', 'prod_roblox_gift_card_us_10', 3));
    const fine = await api.post('/orders', order('fine', 'prod_apple_gift_card_us_10', 1));
    const orderId = placed.body.orderId;

    const stuck = await orderUntil(api, orderId, fulfillmentIs('needs_attention'));
    expect(stuck).toMatchObject({
      status: 'paid',
      fulfillmentStatus: 'needs_attention',
      errorCode: 'delivery_needs_attention',
      resolution: 'manual_review',
      fulfilledQuantity: 1,
      codes: [],
      redeemUrl: null,
    });
    expect((await api.post('/orders', order('stuck', 'prod_roblox_gift_card_us_10', 3))).body).toMatchObject({
      orderId,
      reused: true,
      status: 'paid',
      fulfillmentStatus: 'needs_attention',
      codes: [],
      fulfilledQuantity: 1,
    });
    const events = await eventsOfOrder(h, orderId);
    expect(events).toEqual([
      {
        id: `order:${orderId}:order.delivery_attention`,
        type: 'order.delivery_attention',
        payload: {
          orderId,
          externalOrderId: 'stuck',
          productId: 'prod_roblox_gift_card_us_10',
          qty: 3,
          deliveryType: 'direct_code',
          fulfillmentStatus: 'needs_attention',
          fulfilledQuantity: 1,
          errorCode: 'delivery_needs_attention',
          resolution: 'manual_review',
          codes: [],
          redeemUrl: null,
        },
      },
    ]);

    // Ops: the state query says what is missing and why; the stuck order (and only it) is listed.
    const state = await procurementState(h, orderId);
    expect(state).toMatchObject({
      phase: 'needs_attention',
      qty: 3,
      fulfilledQuantity: 1,
      remaining: 2,
      rounds: 4,
      roundsSinceResume: 4,
      lastSupplierError: 'sandbox supplier: prod_roblox_gift_card_us_10 temporarily unavailable',
      attentionSince: expect.any(Number),
    });
    await orderUntil(api, fine.body.orderId, (o) => o.status === 'delivered');
    // Visibility is eventually consistent.
    const listed = await eventually(async () => {
      const ids = await workflowIds(h, `FulfillmentStatus = "needs_attention" AND AccountId = "${accountId}"`);
      return ids.length === 1 ? ids : undefined;
    });
    expect(listed).toEqual([procurementWorkflowId(orderId)]);
    // The money stays as paid: nothing is refunded automatically.
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.map((r) => r.type)).toEqual(['adjust', 'purchase', 'purchase']);
  });

  test('a permanent supplier refusal goes to needs_attention at once, with the error in the state query', async () => {
    sandboxSupplierControl.script('prod_roblox_gift_card_us_25', { then: 'permanent' });
    const { api } = await reseller(h, '60.00');
    const placed = await api.post('/orders', order('refused', 'prod_roblox_gift_card_us_25', 2));
    await orderUntil(api, placed.body.orderId, fulfillmentIs('needs_attention'));
    expect(await procurementState(h, placed.body.orderId)).toMatchObject({
      phase: 'needs_attention',
      rounds: 1,
      remaining: 2,
      lastSupplierError: 'sandbox supplier: prod_roblox_gift_card_us_25 cannot be supplied',
    });
    expect((await eventsOfOrder(h, placed.body.orderId)).map((e) => e.type)).toEqual(['order.delivery_attention']);
  });
});

describe('one procurement per order', () => {
  test('replaying the externalOrderId, and a late callback re-running the order workflow, during procurement buy nothing twice', async () => {
    sandboxSupplierControl.script('prod_robux_400', { steps: [1], then: 'all', delayMs: 300 });
    const { api, accountId } = await reseller(h, '30.00');
    const placed = await api.post('/orders', order('replayed', 'prod_robux_400', 3));
    const orderId = placed.body.orderId;
    await orderUntil(api, orderId, (o) => o.fulfilledQuantity === 1);

    const replay = await api.post('/orders', order('replayed', 'prod_robux_400', 3));
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ orderId, reused: true, status: 'paid', codes: [] });
    // A duplicate payment notice starts a new run of the order workflow: its hand-off is a no-op.
    const rerun = await h.services.temporal.client.workflow.signalWithStart('orderWorkflow', {
      workflowId: orderWorkflowId(accountId, 'replayed'),
      taskQueue: h.config.TEMPORAL_TASK_QUEUE,
      args: [
        { accountId, externalOrderId: 'replayed', timing: { syncSeconds: 1, lateWatchSeconds: 1, latePollSeconds: 1 } },
      ],
      signal: paymentNotifiedSignal,
      signalArgs: [{ orderId, status: 'paid' }],
    });
    await rerun.result();

    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered');
    expect(delivered.codes).toHaveLength(3);
    const purchases = await supplierPurchases(h, orderId);
    expect(purchases.reduce((n, p) => n + p.codes.length, 0)).toBe(3);
    expect(new Set(purchases.map((p) => p.idempotency_key)).size).toBe(purchases.length);
    expect(sandboxSupplierControl.callsFor('prod_robux_400').filter((c) => c.outcome === 'supplied')).toHaveLength(
      purchases.length,
    );
    const runs = await eventually(async () => {
      const ids = await workflowIds(h, `WorkflowId = "${procurementWorkflowId(orderId)}"`);
      return ids.length > 0 ? ids : undefined;
    });
    expect(runs).toHaveLength(1);
    expect((await api.get('/orders?externalOrderId=replayed')).body.orders).toHaveLength(1);
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.filter((r) => r.type === 'purchase')).toHaveLength(1);
  });
});

test('a replayed placement of a handed-off order re-runs the order workflow without listing it under FulfillmentStatus', async () => {
  sandboxSupplierControl.script('prod_apple_gift_card_us_25', { then: 'permanent' });
  const { api, accountId } = await reseller(h, '60.00');
  const placed = await api.post('/orders', order('handed-off', 'prod_apple_gift_card_us_25', 1));
  const orderId = placed.body.orderId;
  await orderUntil(api, orderId, fulfillmentIs('needs_attention'));
  const first = h.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'handed-off'));
  await first.result();
  const firstRun = (await first.describe()).runId;

  const replay = await api.post('/orders', order('handed-off', 'prod_apple_gift_card_us_25', 1));
  expect(replay.body).toMatchObject({ orderId, reused: true, status: 'paid', fulfillmentStatus: 'needs_attention' });
  const rerun = h.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'handed-off'));
  await rerun.result();
  const { runId } = await rerun.describe();
  expect(runId).not.toBe(firstRun);
  // Every value this run gave FulfillmentStatus, in its history: none but the hand-off's clearing.
  const set = (
    searchAttributePayloadsOf(await rawHistory(h.services.temporal.client, rerun.workflowId, runId)).get(
      FulfillmentStatusKey.name,
    ) ?? []
  ).map((p) => (p.data && p.data.length > 0 ? JSON.parse(Buffer.from(p.data).toString('utf8')) : null));
  expect(set.filter((v) => v !== null && !(Array.isArray(v) && v.length === 0))).toEqual([]);
  const listed = await eventually(async () => {
    const ids = await workflowIds(h, `FulfillmentStatus = "needs_attention" AND AccountId = "${accountId}"`);
    return ids.length === 1 ? ids : undefined;
  });
  expect(listed).toEqual([procurementWorkflowId(orderId)]);
  const l = await expectLedgerMatchesBalance(h, accountId);
  expect(l.rows.filter((r) => r.type === 'purchase')).toHaveLength(1);
});

describe('intent mode (spec 3.1: pending → paid → procured → delivered)', () => {
  test('a direct-code intent order is procured once its checkout is paid, with no balance debit', async () => {
    const { api, accountId } = await reseller(h, '0');
    const placed = await api.post('/orders', order('intent-gift', 'prod_robux_800', 2, 'intent'));
    expect(placed.body).toMatchObject({ status: 'pending', fulfillmentStatus: 'awaiting_payment', codes: [] });
    const paid = await payCheckout(
      h.services.orm.em.fork(),
      h.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(placed.body.checkoutUrl),
    );
    await paid!.callback;
    const delivered = await orderUntil(api, placed.body.orderId, (o) => o.status === 'delivered');
    expect(delivered).toMatchObject({ fulfillmentStatus: 'delivered', fulfilledQuantity: 2, paymentUrl: null });
    expect(delivered.codes).toHaveLength(2);
    expect((await eventsOfOrder(h, placed.body.orderId)).map((e) => e.type)).toEqual(['order.delivered']);
    const l = await ledgerOf(h, accountId);
    expect([l.balance, l.rows.length]).toEqual(['0.00', 0]);
  });
});

test('the admin API is off unless ADMIN_TOKEN is set: 404 with the spec error body', async () => {
  const res = await adminApi(h, 'whatever-token-value').get('/orders?fulfillmentStatus=needs_attention');
  expect(res.status).toBe(404);
  expect(res.body).toMatchObject({ error: 'not_found', requestId: expect.any(String), retryable: false });
});
