import { CODE_RE } from '../../src/codes';
import { adjustBalance, importStock } from '../../src/services/payments/admin';
import { orderStateQuery, orderWorkflowId } from '../../src/contracts/orders-contract';
import {
  AccountIdKey,
  ExternalOrderIdKey,
  OrderStatusKey,
  FulfillmentStatusKey,
} from '../../src/contracts/search-attributes';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';

// Spec 4.3 (orders, balance mode), 4.6 (ledger), 3.1, levels and stock, over real HTTP on real
// Postgres and Temporal. After every test that moves money, balance and ledger are checked.
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ LEVEL_THRESHOLDS: '1000,5000,10000,50000' });
});
afterAll(() => h?.stop());

async function funded(balance: string) {
  const acct = await h.account(balance);
  return { ...acct, api: client(h.apiUrl, acct.apiKey) };
}

const order = (
  externalOrderId: string,
  productId = 'prod_chatgpt_plus_1m',
  qty = 1,
  extra: Record<string, unknown> = {},
) => ({
  externalOrderId,
  productId,
  qty,
  ...extra,
});

describe('placing a balance order (spec 3.1, 4.3 rule 5)', () => {
  test('an ordinary redemption product is delivered at once with codes and redeemUrl, and the ledger shows the debit', async () => {
    const { api, accountId } = await funded('50.00');
    const res = await api.post('/orders', order('o-1', 'prod_chatgpt_plus_1m', 2));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      orderId: expect.stringMatching(/^ord_/),
      externalOrderId: 'o-1',
      amount: '36.00',
      status: 'delivered',
      codes: [expect.stringMatching(CODE_RE), expect.stringMatching(CODE_RE)],
      redeemUrl: `${h.baseUrl}/redeem`,
      deliveryType: 'redemption',
      fulfillmentStatus: null,
      fulfilledQuantity: 2,
      errorCode: null,
      resolution: null,
      reused: false,
    });
    expect(new Set(res.body.codes).size).toBe(2);
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('14.00');
    expect(l.rows.at(-1)).toEqual({
      type: 'purchase',
      amount: '-36.00',
      balance_after: '14.00',
      order_id: res.body.orderId,
    });

    const tx = (await api.get('/transactions')).body.transactions;
    expect(tx[0]).toMatchObject({
      type: 'purchase',
      amount: '-36.00',
      balanceAfter: '14.00',
      order_id: res.body.orderId,
    });
  });

  test('order.delivered is written to the outbox in the same transaction', async () => {
    const { api, accountId } = await funded('20.00');
    const res = await api.post('/orders', order('o-evt'));
    const events = await h.services.orm.em
      .fork()
      .execute<{ id: string; type: string; payload: any }[]>(
        'select id, type, payload from events where account_id = ?',
        [accountId],
      );
    expect(events).toHaveLength(1);
    expect(events[0].id).toMatch(/^evt_/);
    expect(events[0].type).toBe('order.delivered');
    expect(events[0].payload).toEqual({
      orderId: res.body.orderId,
      externalOrderId: 'o-evt',
      productId: 'prod_chatgpt_plus_1m',
      qty: 1,
      codes: res.body.codes,
      redeemUrl: `${h.baseUrl}/redeem`,
      deliveryType: 'redemption',
    });
  });

  test('a direct-code product is paid with no codes and processing (procurement continues asynchronously)', async () => {
    const { api, accountId } = await funded('30.00');
    const res = await api.post('/orders', order('o-gift', 'prod_apple_gift_card_us_10', 2));
    expect(res.body).toMatchObject({
      status: 'paid',
      codes: [],
      redeemUrl: null,
      deliveryType: 'direct_code',
      fulfillmentStatus: 'processing',
      fulfilledQuantity: 0,
      amount: '19.70',
    });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('10.30');
  });

  test('an inventory product delivers imported codes, each sold once; out_of_stock and insufficient_stock debit nothing', async () => {
    const { api, accountId } = await funded('100.00');
    const empty = await api.post('/orders', order('inv-0', 'prod_spotify_premium_1m', 1));
    expect(empty.status).toBe(409);
    expect(empty.body.error).toBe('out_of_stock');

    const imported = ['AAAA-BBBB-CCCC-DDD2', 'AAAA-BBBB-CCCC-DDD3', 'AAAA-BBBB-CCCC-DDD4'];
    await importStock(h.services.orm.em.fork(), 'prod_spotify_premium_1m', imported);
    const avail = await api.get('/products/prod_spotify_premium_1m');
    expect(avail.body).toMatchObject({ stockMode: 'inventory', stock: 3, stockCapped: false, available: true });

    const tooMany = await api.post('/orders', order('inv-1', 'prod_spotify_premium_1m', 4));
    expect(tooMany.status).toBe(409);
    expect(tooMany.body.error).toBe('insufficient_stock');
    expect((await ledgerOf(h, accountId)).balance).toBe('100.00');

    const ok = await api.post('/orders', order('inv-2', 'prod_spotify_premium_1m', 2));
    expect(ok.body.status).toBe('delivered');
    expect(ok.body.codes).toEqual(imported.slice(0, 2));
    const second = await (await funded('20.00')).api.post('/orders', order('inv-3', 'prod_spotify_premium_1m', 1));
    expect(second.body.codes).toEqual([imported[2]]);
    const gone = await api.post('/orders', order('inv-4', 'prod_spotify_premium_1m', 1));
    expect(gone.body.error).toBe('out_of_stock');
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('87.00');
  });
});

describe('rules of spec 4.3', () => {
  test('rule 1: a replay returns the original with reused=true and never charges twice', async () => {
    const { api, accountId } = await funded('40.00');
    const first = await api.post('/orders', order('r1', 'prod_chatgpt_plus_1m', 1));
    const replay = await api.post('/orders', order('r1', 'prod_chatgpt_plus_1m', 1));
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ ...first.body, reused: true });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('22.00');
    expect(l.rows.filter((r) => r.type === 'purchase')).toHaveLength(1);
  });

  test.each([
    ['another productId', order('r2', 'prod_chatgpt_team_1m', 1)],
    ['another qty', order('r2', 'prod_chatgpt_plus_1m', 2)],
  ])('rule 2: a replay with %s is 409 idempotency_conflict', async (_name, body) => {
    const { api, accountId } = await funded('60.00');
    await api.post('/orders', order('r2', 'prod_chatgpt_plus_1m', 1));
    const res = await api.post('/orders', body);
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('idempotency_conflict');
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('42.00');
  });

  test('402 insufficient_balance debits nothing and leaves no order', async () => {
    const { api, accountId } = await funded('17.99');
    const res = await api.post('/orders', order('poor', 'prod_chatgpt_plus_1m', 1));
    expect(res.status).toBe(402);
    expect(res.body.error).toBe('insufficient_balance');
    expect((await api.get('/orders')).body.orders).toEqual([]);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('17.99');
    // With more balance, the same externalOrderId can be placed.
    await adjustBalance(h.services.orm.em.fork(), {
      accountId,
      amount: '0.01',
      note: 'top',
      levelThresholds: h.config.LEVEL_THRESHOLDS,
    });
    const retry = await api.post('/orders', order('poor', 'prod_chatgpt_plus_1m', 1));
    expect(retry.body).toMatchObject({ status: 'delivered', reused: false });
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.00');
  });

  test('rule 6: 409 price_changed carries details.actualUnitPrice; the matching price is accepted', async () => {
    const { api, accountId } = await funded('40.00');
    const stale = await api.post('/orders', order('p1', 'prod_chatgpt_plus_1m', 1, { expectedUnitPrice: '17.50' }));
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ error: 'price_changed', details: { actualUnitPrice: '18.00' } });
    expect((await ledgerOf(h, accountId)).balance).toBe('40.00');
    const ok = await api.post('/orders', order('p2', 'prod_chatgpt_plus_1m', 1, { expectedUnitPrice: '18.00' }));
    expect(ok.body.status).toBe('delivered');
    const badFormat = await api.post(
      '/orders',
      order('p3', 'prod_chatgpt_plus_1m', 1, { expectedUnitPrice: '18.001' }),
    );
    expect(badFormat.body.error).toBe('invalid_input');
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('22.00');
  });

  test.each([
    ['an unknown product', order('nf', 'prod_nope'), 404, 'not_found'],
    ['a productGroupId used as productId', order('grp', 'apple-gift-card-us'), 404, 'not_found'],
    ['qty 0', order('q0', 'prod_chatgpt_plus_1m', 0), 400, 'invalid_input'],
    ['qty 1001', order('q1001', 'prod_chatgpt_plus_1m', 1001), 400, 'invalid_input'],
    ['a fractional qty', order('qf', 'prod_chatgpt_plus_1m', 1.5), 400, 'invalid_input'],
    ['an externalOrderId over 64 characters', order('x'.repeat(65)), 400, 'invalid_input'],
    ['an empty externalOrderId', order(''), 400, 'invalid_input'],
    ['an unknown payment mode', order('pm', 'prod_chatgpt_plus_1m', 1, { payment: 'card' }), 400, 'invalid_input'],
    ['an unknown field', order('uf', 'prod_chatgpt_plus_1m', 1, { coupon: 'x' }), 400, 'invalid_input'],
    ['rule 11: the test product with qty 2', order('t2', 'prod_api_order_test', 2), 400, 'api_test_quantity'],
    [
      'rule 11: the test product in intent mode',
      order('ti', 'prod_api_order_test', 1, { payment: 'intent' }),
      400,
      'api_test_balance_only',
    ],
  ])('%s is %d %s with nothing debited', async (_name, body, status, code) => {
    const { api, accountId } = await funded('30.00');
    const res = await api.post('/orders', body);
    expect(res.status).toBe(status);
    expect(res.body.error).toBe(code);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('30.00');
  });

  test('an externalOrderId of exactly 64 characters is accepted', async () => {
    const { api } = await funded('1.00');
    expect((await api.post('/orders', order('y'.repeat(64), 'prod_api_order_test'))).body.status).toBe('delivered');
  });

  test('out_of_stock when the listing is switched off; fulfillment_unavailable when delivery is down', async () => {
    const { api, accountId } = await funded('200.00');
    const em = h.services.orm.em.fork();
    await em.execute(`update products set in_stock = false where id = 'prod_roblox_gift_card_us_50'`);
    await em.execute(
      `update products set availability_status = 'unavailable' where id = 'prod_roblox_gift_card_us_25'`,
    );
    expect((await api.post('/orders', order('os', 'prod_roblox_gift_card_us_50'))).body.error).toBe('out_of_stock');
    expect((await api.post('/orders', order('fu', 'prod_roblox_gift_card_us_25'))).body.error).toBe(
      'fulfillment_unavailable',
    );
    const listed = (await api.get('/products')).body.products.find((p: any) => p.id === 'prod_roblox_gift_card_us_50');
    expect(listed).toMatchObject({ inStock: false, available: false });
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('200.00');
  });

  test('limited stock: a quantity beyond the hidden count is insufficient_stock; a sale lowers it', async () => {
    const { api, accountId } = await funded('500.00');
    await h.services.orm.em
      .fork()
      .execute(`update products set limited_remaining = 3 where id = 'prod_chatgpt_team_1m'`);
    expect((await api.post('/orders', order('l1', 'prod_chatgpt_team_1m', 4))).body.error).toBe('insufficient_stock');
    expect((await api.post('/orders', order('l2', 'prod_chatgpt_team_1m', 3))).body.status).toBe('delivered');
    expect((await api.post('/orders', order('l3', 'prod_chatgpt_team_1m', 1))).body.error).toBe('out_of_stock');
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('425.00');
  });

  test('the test product: 0.01, codes marked test-only', async () => {
    const { api, accountId } = await funded('0.01');
    const res = await api.post('/orders', order('test-1', 'prod_api_order_test'));
    expect(res.body).toMatchObject({ status: 'delivered', amount: '0.01' });
    const [row] = await h.services.orm.em
      .fork()
      .execute<{ is_test: boolean }[]>('select is_test from issued_codes where code = ?', [res.body.codes[0]]);
    expect(row.is_test).toBe(true);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.00');
    expect((await api.post('/orders', order('test-2', 'prod_api_order_test'))).body.error).toBe('insufficient_balance');
  });
});

describe('levels (spec 1): spending plus balance raises the level, never lowers it', () => {
  test('crossing a threshold changes the next order price', async () => {
    const { api, accountId } = await funded('999.00');
    expect((await ledgerOf(h, accountId)).level).toBe(1);
    expect((await api.get('/products/prod_chatgpt_plus_1m')).body.price).toBe('18.00');
    await adjustBalance(h.services.orm.em.fork(), {
      accountId,
      amount: '1.00',
      note: 'bonus',
      levelThresholds: h.config.LEVEL_THRESHOLDS,
    });
    expect((await ledgerOf(h, accountId)).level).toBe(2);
    const res = await api.post('/orders', order('lv', 'prod_chatgpt_plus_1m', 1));
    expect(res.body.amount).toBe('17.64');
    await adjustBalance(h.services.orm.em.fork(), {
      accountId,
      amount: '-900.00',
      note: 'correction',
      levelThresholds: h.config.LEVEL_THRESHOLDS,
    });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.level).toBe(2);
    expect(l.spending).toBe('17.64');
  });
});

describe('concurrency', () => {
  test('50 concurrent orders against a balance for 30: exactly 30 succeed, 20 get 402, the ledger sums to the balance', async () => {
    const { api, accountId } = await funded('540.00');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api.post('/orders', order(`c-${i}`, 'prod_chatgpt_plus_1m', 1))),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.filter((s) => s === 402)).toHaveLength(20);
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('0.00');
    expect(l.rows.filter((r) => r.type === 'purchase')).toHaveLength(30);
    const codes = results.flatMap((r) => r.body.codes ?? []);
    expect(new Set(codes).size).toBe(30);
  });

  test('50 concurrent requests with one externalOrderId: one debit, every answer names the same order', async () => {
    const { api, accountId } = await funded('100.00');
    const results = await Promise.all(
      Array.from({ length: 50 }, () => api.post('/orders', order('same', 'prod_chatgpt_plus_1m', 1))),
    );
    const ok = results.filter((r) => r.status === 200);
    for (const r of results) {
      if (r.status !== 200) expect(r.body.error).toBe('duplicate_order');
    }
    expect(ok.length).toBeGreaterThan(0);
    expect(new Set(ok.map((r) => r.body.orderId)).size).toBe(1);
    expect(ok.filter((r) => !r.body.reused)).toHaveLength(1);
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('82.00');
    expect(l.rows.filter((r) => r.type === 'purchase')).toHaveLength(1);
  });
});

describe('GET /orders and GET /orders/{id} (spec 2.4, 4.3)', () => {
  test('newest first, filter, limit, opaque cursor and invalid_cursor; summaries carry no codes', async () => {
    const { api } = await funded('10.00');
    for (let i = 0; i < 5; i++) await api.post('/orders', order(`list-${i}`, 'prod_api_order_test'));
    const page1 = await api.get('/orders?limit=2');
    expect(page1.body.orders.map((o: any) => o.external_order_id)).toEqual(['list-4', 'list-3']);
    expect(page1.body.hasMore).toBe(true);
    for (const o of page1.body.orders) {
      expect(o).not.toHaveProperty('codes');
      expect(o).not.toHaveProperty('paymentUrl');
      expect(o).toMatchObject({
        channel: 'wholesale_api',
        product_id: 'prod_api_order_test',
        qty: 1,
        amount: '0.01',
        status: 'delivered',
      });
    }
    const page2 = await api.get(`/orders?limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`);
    expect(page2.body.orders.map((o: any) => o.external_order_id)).toEqual(['list-2', 'list-1']);
    const page3 = await api.get(`/orders?limit=2&cursor=${encodeURIComponent(page2.body.nextCursor)}`);
    expect(page3.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(page3.body.orders).toHaveLength(1);

    expect((await api.get('/orders')).body.orders).toHaveLength(5);
    const filtered = await api.get('/orders?externalOrderId=list-3');
    expect(filtered.body.orders.map((o: any) => o.external_order_id)).toEqual(['list-3']);

    // Its last two characters edited (to something else than they were).
    const edited = page1.body.nextCursor.slice(0, -2) + (page1.body.nextCursor.endsWith('AA') ? 'BB' : 'AA');
    for (const bad of ['forged', edited]) {
      const res = await api.get(`/orders?cursor=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_cursor');
    }
    // A cursor is bound to its filters.
    const mixed = await api.get(`/orders?externalOrderId=list-3&cursor=${encodeURIComponent(page1.body.nextCursor)}`);
    expect(mixed.body.error).toBe('invalid_cursor');
    for (const limit of ['0', '101', 'x'])
      expect((await api.get(`/orders?limit=${limit}`)).body.error).toBe('invalid_input');
  });

  test('detail has the fields of spec 2.4 with codes once delivered', async () => {
    const { api } = await funded('20.00');
    const placed = await api.post('/orders', order('detail-1', 'prod_chatgpt_plus_1m', 1));
    const res = await api.get(`/orders/${placed.body.orderId}`);
    expect(res.body).toEqual({
      id: placed.body.orderId,
      external_order_id: 'detail-1',
      channel: 'wholesale_api',
      product_id: 'prod_chatgpt_plus_1m',
      order_number: expect.stringMatching(/^\d+$/),
      qty: 1,
      unit_price: '18.00',
      amount: '18.00',
      currency: 'USDT',
      status: 'delivered',
      deliveryType: 'redemption',
      created_at: expect.any(Number),
      paid_at: expect.any(Number),
      product_name: 'ChatGPT Plus, 1 month',
      redeemUrl: `${h.baseUrl}/redeem`,
      paymentUrl: null,
      codes: placed.body.codes,
      fulfillmentStatus: null,
      fulfilledQuantity: 1,
      errorCode: null,
      resolution: null,
    });
    expect((await api.get('/orders/ord_unknown')).status).toBe(404);
  });
});

describe('GET /transactions (spec 2.9, 4.6)', () => {
  test('signed amounts, balanceAfter, type filter and cursor pagination', async () => {
    const { api } = await funded('5.00');
    for (let i = 0; i < 3; i++) await api.post('/orders', order(`tx-${i}`, 'prod_api_order_test'));
    const all = await api.get('/transactions');
    expect(all.body.transactions.map((t: any) => [t.type, t.amount, t.balanceAfter])).toEqual([
      ['purchase', '-0.01', '4.97'],
      ['purchase', '-0.01', '4.98'],
      ['purchase', '-0.01', '4.99'],
      ['adjust', '5.00', '5.00'],
    ]);
    const purchases = await api.get('/transactions?type=purchase&limit=2');
    expect(purchases.body.transactions).toHaveLength(2);
    expect(purchases.body.hasMore).toBe(true);
    const rest = await api.get(
      `/transactions?type=purchase&limit=2&cursor=${encodeURIComponent(purchases.body.nextCursor)}`,
    );
    expect(rest.body.transactions.map((t: any) => t.balanceAfter)).toEqual(['4.99']);
    expect((await api.get('/transactions?type=gift')).body.error).toBe('invalid_input');
    expect((await api.get('/transactions?cursor=zzz')).body.error).toBe('invalid_cursor');
  });
});

describe('the order workflow (ARCHITECTURE "Workflows")', () => {
  test('is keyed by account and externalOrderId, answers a state query and keeps search attributes current', async () => {
    const { api, accountId } = await funded('40.00');
    const placed = await api.post('/orders', order('wf-1', 'prod_chatgpt_plus_1m', 1));
    const handle = h.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'wf-1'));
    const state = await handle.query(orderStateQuery);
    expect(state).toMatchObject({ orderId: placed.body.orderId, status: 'delivered', fulfillmentStatus: null });
    await eventually(async () => {
      const sa = (await handle.describe()).typedSearchAttributes;
      return (
        sa.get(OrderStatusKey) === 'delivered' &&
        sa.get(AccountIdKey) === accountId &&
        sa.get(ExternalOrderIdKey) === 'wf-1'
      );
    });
    const listed = await eventually(async () => {
      const found = [];
      for await (const wf of h.services.temporal.client.workflow.list({
        query: `ExternalOrderId = "wf-1" AND AccountId = "${accountId}"`,
      }))
        found.push(wf);
      return found.length === 1 ? found : undefined;
    });
    expect(listed[0].workflowId).toBe(`order:${accountId}:wf-1`);
  });

  test('a direct-code order hands FulfillmentStatus over to its procurement workflow', async () => {
    const { api, accountId } = await funded('40.00');
    const placed = await api.post('/orders', order('wf-gift', 'prod_apple_gift_card_us_10', 1));
    expect(placed.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing' });
    const orderRun = h.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'wf-gift'));
    const procureRun = h.services.temporal.client.workflow.getHandle(`procure:${placed.body.orderId}`);
    await eventually(async () => {
      const [o, p] = await Promise.all([orderRun.describe(), procureRun.describe()]);
      return (
        o.typedSearchAttributes.get(FulfillmentStatusKey) === undefined &&
        p.typedSearchAttributes.get(FulfillmentStatusKey) === 'delivered' &&
        p.typedSearchAttributes.get(AccountIdKey) === accountId
      );
    });
  });
});
