import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CODE_RE } from '../../src/codes';
import { resetSandboxControl } from '../../src/providers/sandbox/sandbox-payments';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import { PAYMENT_ENV, payThroughPage } from '../helpers/payments';

// Spec 4.7: `{base_url}/mcp` mirrors the REST API for the same key, driven here with the SDK's own
// client over real HTTP on real Postgres and Temporal. Spec 5 (auth) and 8 (limits) apply as in REST.
let h: Harness;
// An API without a worker and a tiny request budget, for the shared per-key rate limit.
let tight: Harness;

const TOOL_NAMES = [
  'list_products',
  'check_availability',
  'get_balance',
  'create_topup',
  'purchase_codes',
  'get_order',
  'list_orders',
  'list_transactions',
];

beforeAll(async () => {
  // An account funded with 100 or more is Lv2, so "same price" is a level price, not the list price.
  h = await startHarness({
    ...PAYMENT_ENV,
    PAYMENT_WINDOW_SECONDS: '120',
    LEVEL_THRESHOLDS: '100,5000,10000,50000',
    TOPUP_RATE_LIMIT_PER_HOUR: '4',
  });
  tight = await startHarness({ RATE_LIMIT_PER_MINUTE: '5' }, { worker: false });
});
afterAll(async () => {
  await h?.stop();
  await tight?.stop();
});
beforeEach(() => resetSandboxControl());

const opened: Client[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

/** The SDK client on `/mcp` with a bearer key; remembers each response's X-Request-Id. */
async function connect(key: string | undefined, harness: Harness = h) {
  const requestIds: string[] = [];
  const transport = new StreamableHTTPClientTransport(new URL(`${harness.baseUrl}/mcp`), {
    requestInit: key === undefined ? {} : { headers: { Authorization: `Bearer ${key}` } },
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      const id = res.headers.get('x-request-id');
      if (id) requestIds.push(id);
      return res;
    },
  });
  const mcp = new Client({ name: 'mcp-test', version: '1.0.0' });
  await mcp.connect(transport);
  opened.push(mcp);
  const tool = async (name: string, args: Record<string, unknown> = {}) =>
    (await mcp.callTool({ name, arguments: args })) as CallToolResult;
  return {
    mcp,
    requestIds,
    tool,
    /** A successful call: structuredContent, which the text block repeats as JSON. */
    async ok(name: string, args: Record<string, unknown> = {}): Promise<any> {
      const res = await tool(name, args);
      expect(res.isError ?? false).toBe(false);
      expect(JSON.parse((res.content[0] as { text: string }).text)).toEqual(res.structuredContent);
      return res.structuredContent;
    },
    /** A tool error: the spec 2.11 body, carrying the request id of the HTTP request that made the call. */
    async fail(name: string, args: Record<string, unknown> = {}): Promise<any> {
      const res = await tool(name, args);
      expect(res.isError).toBe(true);
      const body = JSON.parse((res.content[0] as { text: string }).text);
      expect(body).toEqual(
        expect.objectContaining({
          error: expect.any(String),
          message: expect.any(String),
          retryable: expect.any(Boolean),
        }),
      );
      expect(body.requestId).toBe(requestIds.at(-1));
      return body;
    },
  };
}

async function account(balance: string) {
  const a = await h.account(balance);
  return { ...a, api: client(h.apiUrl, a.apiKey), m: await connect(a.apiKey) };
}

const purchase = (
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

describe('tool list (spec 4.7)', () => {
  test('exactly the eight tools, each with a description, input and output schema and annotations; no redemption tool', async () => {
    const { m } = await account('0');
    const { tools } = await m.mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const t of tools) {
      expect(t.description!.length).toBeGreaterThan(100);
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema?.type).toBe('object');
      expect(t.annotations?.readOnlyHint).toBe(!['create_topup', 'purchase_codes'].includes(t.name));
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    // Orders and top-ups through MCP require reusable idempotency ids.
    expect(byName.purchase_codes.inputSchema.required).toEqual(
      expect.arrayContaining(['externalOrderId', 'productId', 'qty']),
    );
    expect(byName.create_topup.inputSchema.required).toEqual(expect.arrayContaining(['externalTopupId', 'amount']));
    expect(byName.purchase_codes.annotations).toMatchObject({ idempotentHint: true, destructiveHint: false });
    expect(byName.purchase_codes.description).toEqual(expect.stringContaining('redeemUrl'));
    expect(byName.purchase_codes.description).toEqual(expect.stringContaining('idempotency_conflict'));
    expect(byName.create_topup.description).toEqual(expect.stringContaining('only to the person who will pay'));
    expect(m.mcp.getInstructions()).toEqual(expect.stringContaining('REST only'));
    expect(tools.some((t) => /redeem|redemption/.test(t.name))).toBe(false);
  });
});

describe('buying through MCP (spec 4.3 via 4.7)', () => {
  test('purchase_codes with balance delivers codes with redeemUrl and debits once; balance, ledger and transactions agree', async () => {
    const { m, accountId, api } = await account('50.00');
    const order = await m.ok('purchase_codes', purchase('m-1', 'prod_chatgpt_plus_1m', 2));
    expect(order).toEqual({
      orderId: expect.stringMatching(/^ord_/),
      externalOrderId: 'm-1',
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

    expect(await m.ok('get_balance')).toEqual({ balance: '14.00', currency: 'USDT' });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.at(-1)).toEqual({
      type: 'purchase',
      amount: '-36.00',
      balance_after: '14.00',
      order_id: order.orderId,
    });

    const tx = await m.ok('list_transactions');
    expect(tx).toEqual((await api.get('/transactions')).body);
    expect(tx.transactions[0]).toMatchObject({
      type: 'purchase',
      amount: '-36.00',
      balanceAfter: '14.00',
      order_id: order.orderId,
    });
    expect((await m.ok('list_transactions', { type: 'adjust' })).transactions).toEqual([
      expect.objectContaining({ type: 'adjust', amount: '50.00', balanceAfter: '50.00' }),
    ]);

    const detail = await m.ok('get_order', { orderId: order.orderId });
    expect(detail).toEqual((await api.get(`/orders/${order.orderId}`)).body);
    expect(detail).toMatchObject({
      status: 'delivered',
      codes: order.codes,
      unit_price: '18.00',
      channel: 'wholesale_api',
      paymentUrl: null,
    });
  });

  test('rules 1 and 2: a replay is reused with no second debit; another qty is an idempotency_conflict tool error', async () => {
    const { m, accountId } = await account('40.00');
    const first = await m.ok('purchase_codes', purchase('m-r'));
    expect(await m.ok('purchase_codes', purchase('m-r'))).toEqual({ ...first, reused: true });

    const conflict = await m.fail('purchase_codes', purchase('m-r', 'prod_chatgpt_plus_1m', 2));
    expect(conflict).toEqual({
      error: 'idempotency_conflict',
      message: expect.any(String),
      requestId: expect.stringMatching(/^req_/),
      retryable: false,
      details: { productId: 'prod_chatgpt_plus_1m', qty: 1 },
    });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('22.00');
    expect(l.rows.filter((r) => r.type === 'purchase')).toHaveLength(1);
  });

  test('rules 3 and 10: an intent order is pending with a checkout link and no debit; get_order shows paymentUrl until paid, then codes', async () => {
    const { m, accountId } = await account('5.00');
    const order = await m.ok('purchase_codes', purchase('m-i', 'prod_chatgpt_plus_1m', 1, { payment: 'intent' }));
    expect(order).toMatchObject({
      status: 'pending',
      codes: [],
      amount: '18.00',
      checkoutUrl: expect.stringMatching(/\/checkout\/chk_/),
    });
    expect(order.paymentUrl).toBe(order.checkoutUrl);
    expect((await ledgerOf(h, accountId)).balance).toBe('5.00');

    expect(await m.ok('get_order', { orderId: order.orderId })).toMatchObject({
      status: 'pending',
      paymentUrl: order.checkoutUrl,
      codes: [],
    });
    const listed = await m.ok('list_orders', { externalOrderId: 'm-i' });
    expect(listed).toEqual({
      orders: [expect.objectContaining({ id: order.orderId, status: 'pending' })],
      nextCursor: null,
      hasMore: false,
    });
    expect(listed.orders[0]).not.toHaveProperty('paymentUrl');

    expect(await payThroughPage(order.checkoutUrl)).toContain('Payment received');
    const delivered = await eventually(async () => {
      const d = await m.ok('get_order', { orderId: order.orderId });
      return d.status === 'delivered' ? d : undefined;
    });
    expect(delivered).toMatchObject({
      paymentUrl: null,
      codes: [expect.stringMatching(CODE_RE)],
      redeemUrl: `${h.baseUrl}/redeem`,
    });
    // Paid at the checkout, not from the balance.
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('5.00');
  });

  test.each([
    ['payment=balance', {}],
    ['payment=intent', { payment: 'intent' }],
  ])(
    'the test product is REST only: %s through MCP is api_test_balance_only and debits nothing',
    async (_name, extra) => {
      const { m, accountId } = await account('1.00');
      const refused = await m.fail('purchase_codes', purchase('m-test', 'prod_api_order_test', 1, extra));
      expect(refused).toMatchObject({ error: 'api_test_balance_only', retryable: false });
      const l = await expectLedgerMatchesBalance(h, accountId);
      expect(l.balance).toBe('1.00');
      expect((await m.ok('list_orders')).orders).toEqual([]);
    },
  );

  test.each([
    [
      'no externalOrderId (MCP requires the idempotency id)',
      { productId: 'prod_chatgpt_plus_1m', qty: 1 },
      'externalOrderId',
    ],
    ['qty 0', purchase('m-bad', 'prod_chatgpt_plus_1m', 0), 'qty'],
    ['an unknown field', { ...purchase('m-bad'), quantity: 2 }, ''],
    [
      'a float price lock',
      purchase('m-bad', 'prod_chatgpt_plus_1m', 1, { expectedUnitPrice: 18 }),
      'expectedUnitPrice',
    ],
  ])(
    'invalid arguments (%s) are an invalid_input tool error with the issues, and nothing is ordered',
    async (_name, args, path) => {
      const { m, accountId } = await account('20.00');
      const res = await m.fail('purchase_codes', args);
      expect(res).toMatchObject({
        error: 'invalid_input',
        retryable: false,
        details: { issues: expect.arrayContaining([expect.objectContaining({ path })]) },
      });
      expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('20.00');
    },
  );

  test("errors keep their spec codes: insufficient_balance (402), price_changed with actualUnitPrice, not_found for another account's order", async () => {
    const { m, accountId } = await account('10.00');
    expect(await m.fail('purchase_codes', purchase('m-poor'))).toMatchObject({
      error: 'insufficient_balance',
      retryable: false,
    });
    expect(
      await m.fail('purchase_codes', purchase('m-price', 'prod_chatgpt_plus_1m', 1, { expectedUnitPrice: '1.00' })),
    ).toMatchObject({
      error: 'price_changed',
      details: { actualUnitPrice: '18.00' },
    });
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('10.00');

    const other = await account('20.00');
    const theirs = await other.m.ok('purchase_codes', purchase('m-theirs'));
    expect(await m.fail('get_order', { orderId: theirs.orderId })).toMatchObject({ error: 'not_found' });
    await expect(m.tool('redeem_code', { code: theirs.codes[0] })).rejects.toThrow(/not found/);
  });
});

describe('catalog and balance through MCP', () => {
  test("list_products and check_availability return the REST shapes at the caller's level price; the test product stays hidden", async () => {
    const { m, api } = await account('150.00');
    const products = await m.ok('list_products');
    expect(products).toEqual((await api.get('/products')).body);
    const plus = products.products.find((p: { id: string }) => p.id === 'prod_chatgpt_plus_1m');
    expect(plus).toMatchObject({ price: '17.64', retailPrice: '18.00' });
    expect(products.products.map((p: { id: string }) => p.id)).not.toContain('prod_api_order_test');

    const avail = await m.ok('check_availability', { productId: 'prod_chatgpt_plus_1m', qty: 3 });
    expect(avail).toEqual({
      ...(await api.get('/products/prod_chatgpt_plus_1m/availability?qty=3')).body,
      checkedAt: expect.any(Number),
    });
    expect(avail).toMatchObject({ productId: 'prod_chatgpt_plus_1m', qty: 3, available: true, unitPrice: '17.64' });
    expect((await m.ok('check_availability', { productId: 'prod_chatgpt_plus_1m' })).qty).toBe(1);
    expect(await m.fail('check_availability', { productId: 'prod_nope' })).toMatchObject({ error: 'not_found' });
  });
});

describe('top-ups through MCP (spec 4.2 via 4.7)', () => {
  test('create_topup returns a checkout; a replay is reused; another amount is idempotency_conflict; paid, the balance is credited', async () => {
    const { m, accountId } = await account('0');
    const topup = await m.ok('create_topup', { externalTopupId: 'mt-1', amount: '25.50' });
    expect(topup).toEqual({
      orderId: expect.stringMatching(/^ord_/),
      externalTopupId: 'mt-1',
      amount: '25.50',
      status: 'pending',
      checkoutUrl: expect.stringMatching(/\/checkout\/chk_/),
      paymentUrl: topup.checkoutUrl,
      reused: false,
    });
    expect(await m.ok('create_topup', { externalTopupId: 'mt-1', amount: '25.50' })).toEqual({
      ...topup,
      reused: true,
    });
    expect(await m.fail('create_topup', { externalTopupId: 'mt-1', amount: '30.00' })).toMatchObject({
      error: 'idempotency_conflict',
      details: { amount: '25.50', currency: 'USDT' },
    });
    // Orders and top-ups through MCP require reusable idempotency ids: no legacy keyless top-up.
    expect(await m.fail('create_topup', { amount: '5.00' })).toMatchObject({ error: 'invalid_input' });

    expect(await payThroughPage(topup.checkoutUrl)).toContain('Payment received');
    await eventually(async () => (await m.ok('get_balance')).balance === '25.50');
    expect(await m.ok('get_order', { orderId: topup.orderId })).toMatchObject({
      channel: 'topup',
      status: 'delivered',
      paymentUrl: null,
    });
    expect((await m.ok('list_transactions', { type: 'topup' })).transactions).toEqual([
      expect.objectContaining({ type: 'topup', amount: '25.50', balanceAfter: '25.50', order_id: topup.orderId }),
    ]);
    await expectLedgerMatchesBalance(h, accountId);
  });

  test('spec 8: the hourly top-up quota is per account and shared with REST; over it MCP answers rate_limited with retryAfter', async () => {
    const { m, api } = await account('0');
    const rest = await api.post('/topup', { externalTopupId: 'q-1', amount: '5.00' });
    expect(rest.status).toBe(200);
    // A top-up made through REST is replayed through MCP with the same id.
    expect(await m.ok('create_topup', { externalTopupId: 'q-1', amount: '5.00' })).toEqual({
      ...rest.body,
      reused: true,
    });
    await m.ok('create_topup', { externalTopupId: 'q-2', amount: '5.00' });
    expect((await api.post('/topup', { externalTopupId: 'q-3', amount: '5.00' })).status).toBe(200);
    expect(await m.fail('create_topup', { externalTopupId: 'q-4', amount: '5.00' })).toMatchObject({
      error: 'rate_limited',
      retryable: true,
      details: { retryAfter: expect.any(Number) },
    });
    expect((await api.post('/topup', { externalTopupId: 'q-4', amount: '5.00' })).body.error).toBe('rate_limited');
  });
});

describe('MCP and REST are one account (spec 1: same per-level price)', () => {
  test('an order through MCP and one through REST settle at the same Lv2 price and appear in one GET /orders listing', async () => {
    const { m, api, accountId } = await account('150.00');
    const viaMcp = await m.ok('purchase_codes', purchase('both-mcp', 'prod_chatgpt_plus_1m', 2));
    const viaRest = await api.post('/orders', purchase('both-rest', 'prod_chatgpt_plus_1m', 2));
    expect(viaRest.status).toBe(200);
    expect(viaMcp.amount).toBe('35.28');
    expect(viaRest.body.amount).toBe(viaMcp.amount);
    const [mcpDetail, restDetail] = await Promise.all([
      api.get(`/orders/${viaMcp.orderId}`),
      api.get(`/orders/${viaRest.body.orderId}`),
    ]);
    expect(mcpDetail.body.unit_price).toBe('17.64');
    expect(restDetail.body.unit_price).toBe(mcpDetail.body.unit_price);

    const listing = await api.get('/orders');
    expect(listing.body.orders.map((o: { id: string }) => o.id)).toEqual([viaRest.body.orderId, viaMcp.orderId]);
    expect(listing.body.orders.map((o: { external_order_id: string }) => o.external_order_id)).toEqual([
      'both-rest',
      'both-mcp',
    ]);
    expect(await m.ok('list_orders')).toEqual(listing.body);
    // A REST order is replayed through MCP by its externalOrderId, and the other way round.
    expect(await m.ok('purchase_codes', purchase('both-rest', 'prod_chatgpt_plus_1m', 2))).toEqual({
      ...viaRest.body,
      reused: true,
    });
    expect((await api.post('/orders', purchase('both-mcp', 'prod_chatgpt_plus_1m', 2))).body).toEqual({
      ...viaMcp,
      reused: true,
    });

    const page1 = await m.ok('list_orders', { limit: 1 });
    expect(page1).toMatchObject({ hasMore: true, orders: [expect.objectContaining({ id: viaRest.body.orderId })] });
    expect((await m.ok('list_orders', { limit: 1, cursor: page1.nextCursor })).orders[0].id).toBe(viaMcp.orderId);
    expect(await m.fail('list_orders', { cursor: 'forged' })).toMatchObject({ error: 'invalid_cursor' });

    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('79.44');
  });
});

describe('authentication and limits before any MCP handling (spec 5, 8)', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
  };
  const mcpHeaders = { accept: 'application/json, text/event-stream' };

  test.each([
    ['a missing key', undefined],
    ['an invalid key', 'wk_not_a_real_key'],
  ])('%s is HTTP 401 unauthorized with the spec error body, and the SDK client cannot connect', async (_name, key) => {
    await expect(connect(key)).rejects.toMatchObject({ code: 401, message: expect.stringContaining('unauthorized') });
    const res = await call(`${h.baseUrl}/mcp`, {
      body: initialize,
      headers: mcpHeaders,
      ...(key === undefined ? {} : { key }),
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: 'unauthorized',
      message: expect.any(String),
      requestId: res.headers.get('x-request-id'),
      retryable: false,
    });
  });

  test('with a valid key a raw initialize succeeds; GET and DELETE are 405 (stateless endpoint)', async () => {
    const { apiKey } = await h.account('0');
    const init = await call(`${h.baseUrl}/mcp`, { key: apiKey, body: initialize, headers: mcpHeaders });
    expect(init.status).toBe(200);
    expect(init.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { serverInfo: { name: 'wholesale' }, capabilities: { tools: {} } },
    });
    for (const method of ['GET', 'DELETE']) {
      const res = await call(`${h.baseUrl}/mcp`, { key: apiKey, method, headers: mcpHeaders });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    }
  });

  test('REST and MCP draw on one request budget per key: exhausted through REST, /mcp is 429 with Retry-After', async () => {
    const { apiKey } = await tight.account('0');
    const api = client(tight.apiUrl, apiKey);
    const remaining = (r: { headers: Headers }) => Number(r.headers.get('x-ratelimit-remaining'));
    const first = await api.get('/balance');
    const viaMcp = await call(`${tight.baseUrl}/mcp`, { key: apiKey, body: initialize, headers: mcpHeaders });
    expect(viaMcp.status).toBe(200);
    expect(remaining(viaMcp)).toBe(remaining(first) - 1);
    const second = await api.get('/balance');
    expect(remaining(second)).toBe(remaining(first) - 2);

    let last = second;
    for (let i = 0; i < 5 && last.status !== 429; i++) last = await api.get('/balance');
    expect(last.status).toBe(429);

    const refused = await call(`${tight.baseUrl}/mcp`, { key: apiKey, body: initialize, headers: mcpHeaders });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body).toEqual({
      error: 'rate_limited',
      message: expect.any(String),
      requestId: refused.headers.get('x-request-id'),
      retryable: true,
    });
    await expect(connect(apiKey, tight)).rejects.toMatchObject({
      code: 429,
      message: expect.stringContaining('rate_limited'),
    });
    // Another key has its own budget.
    const other = await tight.account('0');
    expect(
      (await call(`${tight.baseUrl}/mcp`, { key: other.apiKey, body: initialize, headers: mcpHeaders })).status,
    ).toBe(200);
  });
});
