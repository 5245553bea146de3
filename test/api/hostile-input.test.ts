import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import { sign } from '../../src/providers/sandbox/sandbox-payments';
import { encodeCursor } from '../../src/services/cursor';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// Issue 11: one hygiene rule at the edge for every surface. A lone surrogate, a NUL or another
// control character in an id, code, URL or key is `400 invalid_input` with the spec's error body
// (2.11) before anything is stored or any workflow is started, and the service keeps serving.
const ADMIN_TOKEN = 'admin-token-for-hostile-input-tests';
let h: Harness;
let acct: { accountId: string; apiKey: string };
let api: ReturnType<typeof client>;

beforeAll(async () => {
  h = await startHarness({ ADMIN_TOKEN, WEBHOOK_ALLOW_INSECURE_URLS: 'false' });
  acct = await h.account('50.00');
  api = client(h.apiUrl, acct.apiKey);
});
afterAll(() => h?.stop());

const LONE = '\ud800';
const NUL = '\u0000';
const BEL = '\u0007';
const HOSTILE = [
  ['a lone surrogate', LONE],
  ['a NUL', NUL],
  ['a control character', BEL],
] as const;

/**
 * Percent-encodes like a client would; a lone surrogate has no UTF-8 form, so it goes out as the
 * bytes of its CESU-8 spelling (ED A0 80), which is what a sloppy client sends.
 */
const enc = (s: string) => s.split(LONE).map(encodeURIComponent).join('%ED%A0%80');

/** The spec's error body, with requestId equal to the X-Request-Id header. */
function expectInvalidInput(res: { status: number; body: any; headers: Headers }, code = 'invalid_input') {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ error: code, retryable: false });
  expect(typeof res.body.message).toBe('string');
  expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
}

async function expectNothingChanged() {
  const money = await expectLedgerMatchesBalance(h, acct.accountId);
  expect(money.balance).toBe('50.00');
  expect(money.rows).toHaveLength(1);
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute<{ n: string }[]>('select count(*) as n from orders where account_id = ?', [acct.accountId]);
  expect(Number(n)).toBe(0);
}

test('the probe of the issue: a lone surrogate productId is 400 and the service keeps serving', async () => {
  const res = await api.post('/orders', { externalOrderId: 'crash-1', productId: LONE, qty: 1 });
  expectInvalidInput(res);
  expect(res.body.details).toMatchObject({ issues: [expect.objectContaining({ path: 'body.productId' })] });
  // No workflow was started for it, and the process answers the next requests.
  await expect(
    h.services.temporal.client.workflow.getHandle(orderWorkflowId(acct.accountId, 'crash-1')).describe(),
  ).rejects.toBeInstanceOf(WorkflowNotFoundError);
  await expectNothingChanged();
  const other = await h.account('1.00');
  const ok = await client(h.apiUrl, other.apiKey).post('/orders', {
    externalOrderId: 'after-crash',
    productId: 'prod_api_order_test',
    qty: 1,
  });
  expect(ok.body).toMatchObject({ status: 'delivered' });
  expect((await expectLedgerMatchesBalance(h, other.accountId)).balance).toBe('0.99');
});

// Every id-like field of every REST endpoint, each with each hostile value.
const REST_CASES: [string, (v: string) => Promise<{ status: number; body: any; headers: Headers }>][] = [
  [
    'POST /orders externalOrderId',
    (v) => api.post('/orders', { externalOrderId: `x${v}`, productId: 'prod_api_order_test', qty: 1 }),
  ],
  ['POST /orders productId', (v) => api.post('/orders', { externalOrderId: 'pid', productId: `prod${v}`, qty: 1 })],
  [
    'POST /orders expectedUnitPrice',
    (v) =>
      api.post('/orders', {
        externalOrderId: 'eup',
        productId: 'prod_api_order_test',
        qty: 1,
        expectedUnitPrice: `1${v}`,
      }),
  ],
  [
    'POST /orders a field name',
    (v) => api.post('/orders', { externalOrderId: 'fn', productId: 'prod_api_order_test', qty: 1, [`k${v}`]: 1 }),
  ],
  ['GET /orders?externalOrderId', (v) => api.get(`/orders?externalOrderId=${enc(`x${v}`)}`)],
  ['GET /orders?cursor', (v) => api.get(`/orders?cursor=${enc(`c${v}`)}`)],
  ['GET /orders/{id}', (v) => api.get(`/orders/${enc(`o${v}`)}`)],
  ['GET /products/{id}', (v) => api.get(`/products/${enc(`p${v}`)}`)],
  ['GET /products/{id}/availability', (v) => api.get(`/products/${enc(`p${v}`)}/availability`)],
  ['POST /topup externalTopupId', (v) => api.post('/topup', { externalTopupId: `t${v}`, amount: '10.00' })],
  ['POST /redemptions code', (v) => api.post('/redemptions', { code: `AAAA-BBBB-CCCC-DDD${v}`, redeemInfo: {} })],
  [
    'POST /redemptions redeemInfo value',
    (v) => api.post('/redemptions', { code: 'AAAA-BBBB-CCCC-DDDD', redeemInfo: { email: `a${v}@b.c` } }),
  ],
  [
    'POST /redemptions redeemInfo key',
    (v) => api.post('/redemptions', { code: 'AAAA-BBBB-CCCC-DDDD', redeemInfo: { [`k${v}`]: 'x' } }),
  ],
  ['GET /redemptions?code', (v) => api.get(`/redemptions?code=${enc(`c${v}`)}`)],
  ['GET /redemptions/{id}', (v) => api.get(`/redemptions/${enc(`r${v}`)}`)],
  ['PUT /webhook url', (v) => api.put('/webhook', { url: `https://hooks.example.com/${v}` })],
  ['POST /webhook/deliveries/{id}/retry', (v) => api.post(`/webhook/deliveries/${enc(`d${v}`)}/retry`, {})],
  ['GET /transactions?cursor', (v) => api.get(`/transactions?cursor=${enc(`c${v}`)}`)],
  ['GET /webhook/deliveries?cursor', (v) => api.get(`/webhook/deliveries?cursor=${enc(`c${v}`)}`)],
];

describe.each(HOSTILE)('REST with %s', (_name, value) => {
  test.each(REST_CASES)('%s is 400 invalid_input', async (_label, send) => {
    expectInvalidInput(await send(value));
  });
  afterAll(expectNothingChanged);
});

/** One raw HTTP/1.1 exchange on a socket, for requests fetch() refuses to send. */
async function rawHttp(request: string): Promise<{ status: number; headers: string; body: any }> {
  const { connect } = await import('node:net');
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(h.baseUrl).port), '127.0.0.1', () => socket.write(request));
    let data = '';
    socket.on('data', (d) => {
      data += d.toString('latin1');
      if (/\r\n\r\n/.test(data) && /content-length: (\d+)/i.test(data)) {
        const length = Number(/content-length: (\d+)/i.exec(data)![1]);
        if (Buffer.byteLength(data.slice(data.indexOf('\r\n\r\n') + 4), 'latin1') >= length) socket.end();
      }
    });
    socket.on('end', () => resolve(data));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
  const split = raw.indexOf('\r\n\r\n');
  return { status: Number(raw.slice(9, 12)), headers: raw.slice(0, split), body: JSON.parse(raw.slice(split + 4)) };
}

test.each([
  [
    'a DEL in Idempotency-Key',
    `POST /wholesale/v1/topup HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nIdempotency-Key: k\u007f\r\nContent-Length: 19\r\n\r\n{"amount":"10.00"}\n`,
  ],
  [
    'a NUL in Idempotency-Key',
    `POST /wholesale/v1/topup HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nIdempotency-Key: k\u0000\r\nContent-Length: 19\r\n\r\n{"amount":"10.00"}\n`,
  ],
  [
    'a NUL in another header',
    'GET /wholesale/v1/balance HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nX-Bad: a\u0000b\r\n\r\n',
  ],
  ['a broken request line', 'GET /\u0000 HTTP/1.1\r\nHost: x\r\n\r\n'],
])('%s gets 400 with the spec error body, and the server lives on', async (_name, request) => {
  const res = await rawHttp(request.replace('KEY', acct.apiKey));
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ error: 'invalid_input', retryable: false });
  expect(res.headers.toLowerCase()).toContain(`x-request-id: ${res.body.requestId}`);
  expect((await api.get('/balance')).body).toEqual({ balance: '50.00', currency: 'USDT' });
  await expectNothingChanged();
});

test('deeply nested and prototype-named bodies are 400, never a crash', async () => {
  const deep = `${'['.repeat(5000)}"x"${']'.repeat(5000)}`;
  expectInvalidInput(
    await call(`${h.apiUrl}/redemptions`, {
      key: acct.apiKey,
      rawBody: `{"code":"AAAA-BBBB-CCCC-DDDD","redeemInfo":{"a":${deep}}}`,
    }),
  );
  expectInvalidInput(
    await call(`${h.apiUrl}/orders`, {
      key: acct.apiKey,
      rawBody: `{"externalOrderId":"deep","productId":"p","qty":${deep}}`,
    }),
  );
  expectInvalidInput(
    await call(`${h.apiUrl}/redemptions`, {
      key: acct.apiKey,
      rawBody: '{"code":"AAAA-BBBB-CCCC-DDDD","redeemInfo":{"__proto__":{"polluted":"1"}}}',
    }),
  );
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

describe('MCP tool arguments', () => {
  let mcp: Client;
  beforeAll(async () => {
    mcp = new Client({ name: 'hostile', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${acct.apiKey}` } },
      }),
    );
  });
  afterAll(() => mcp?.close());

  const MCP_CASES: [string, string, (v: string) => Record<string, unknown>][] = [
    [
      'purchase_codes',
      'externalOrderId',
      (v) => ({ externalOrderId: `m${v}`, productId: 'prod_chatgpt_plus_1m', qty: 1 }),
    ],
    ['purchase_codes', 'productId', (v) => ({ externalOrderId: 'm1', productId: `p${v}`, qty: 1 })],
    ['create_topup', 'externalTopupId', (v) => ({ externalTopupId: `t${v}`, amount: '5.00' })],
    ['check_availability', 'productId', (v) => ({ productId: `p${v}` })],
    ['get_order', 'orderId', (v) => ({ orderId: `o${v}` })],
    ['list_orders', 'externalOrderId', (v) => ({ externalOrderId: `e${v}` })],
    ['list_orders', 'cursor', (v) => ({ cursor: `c${v}` })],
    ['list_transactions', 'cursor', (v) => ({ cursor: `c${v}` })],
  ];
  const cases = HOSTILE.flatMap(([name, v]) =>
    MCP_CASES.map(([tool, field, args]) => [tool, field, name, args(v)] as const),
  );

  test.each(cases)('%s %s with %s is invalid_input', async (tool, _field, _name, args) => {
    const res = (await mcp.callTool({ name: tool, arguments: args })) as CallToolResult;
    expect(res.isError).toBe(true);
    const body = JSON.parse((res.content[0] as { text: string }).text);
    expect(body).toMatchObject({ error: 'invalid_input', retryable: false });
    expect(typeof body.requestId).toBe('string');
  });

  afterAll(expectNothingChanged);
});

describe('the redemption site, the admin API and the payment callback', () => {
  // A form post cannot carry a lone surrogate (the form decoder reads bad bytes as U+FFFD).
  test.each([
    ['a NUL', '%00'],
    ['a control character', '%07'],
  ])('site code form with %s is a 400 page', async (_name, v) => {
    const res = await fetch(`${h.baseUrl}/redeem`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `code=AAAA${v}`,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('role="alert"');
  });

  test('site details form with a NUL in a field is a 400 page', async () => {
    const res = await fetch(`${h.baseUrl}/redeem/submit`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'code=AAAA-BBBB-CCCC-DDDD&rf_email=a%00b',
    });
    expect(res.status).toBe(400);
  });

  test.each(HOSTILE)('admin order id, actor and reason with %s are 400', async (_name, v) => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const path = enc(`o${v}`);
    expectInvalidInput(await call(`${h.baseUrl}/admin/v1/orders/${path}`, { headers: admin }));
    expectInvalidInput(
      await call(`${h.baseUrl}/admin/v1/orders/ord_x/resume`, {
        headers: admin,
        body: { actor: `ops${v}`, reason: 'r' },
      }),
    );
    if (v !== BEL)
      expectInvalidInput(
        await call(`${h.baseUrl}/admin/v1/orders/ord_x/resume`, {
          headers: admin,
          body: { actor: 'ops', reason: `r${v}` },
        }),
      );
  });

  test('a support reason may keep newlines and tabs (free text)', async () => {
    const res = await call(`${h.baseUrl}/admin/v1/orders/ord_unknown/resume`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: { actor: 'ops', reason: 'line one\n\tline two' },
    });
    expect(res.status).toBe(404);
  });

  test.each(HOSTILE)(
    'a correctly signed callback with %s in checkoutId is 400 and changes nothing',
    async (_name, v) => {
      const body = JSON.stringify({ checkoutId: `chk_${v}`, reference: 'ord_x', status: 'paid' });
      const res = await call(`${h.baseUrl}/payments/callback`, {
        rawBody: body,
        headers: { 'x-sandbox-signature': sign(h.config.PAYMENT_CALLBACK_SECRET, body) },
      });
      expectInvalidInput(res);
    },
  );

  test('checkout and sandbox paths with a NUL are 400', async () => {
    expectInvalidInput(await call(`${h.baseUrl}/checkout/chk_%00`));
    expectInvalidInput(await call(`${h.baseUrl}/checkout/%ED%A0%80/pay`, { method: 'POST' }));
  });
});

describe('cursors (issue 11 item 4): signed with the real secret but holding a garbage position', () => {
  const scope = (list: string, filters: Record<string, unknown>) => ({
    secret: h.config.CURSOR_SECRET,
    accountId: acct.accountId,
    list,
    filters,
  });
  const GARBAGE: unknown[] = [
    'abc',
    '1; drop table orders',
    1.5,
    -1,
    0,
    1e308,
    '2026-13-45 99:99:99+00|x',
    '2026-01-01 00:00:00+00|',
    '|',
    '\u0000',
    { a: 1 },
  ];
  test.each(GARBAGE)(
    'position %p is 400 invalid_cursor on /orders, /transactions and /webhook/deliveries',
    async (position) => {
      const lists: [string, string, Record<string, unknown>][] = [
        ['/orders', 'orders', { e: null }],
        ['/transactions', 'transactions', { t: null }],
        ['/webhook/deliveries', 'webhook_deliveries', {}],
      ];
      for (const [path, list, filters] of lists) {
        const cursor = encodeCursor(scope(list, filters), position as string | number);
        expectInvalidInput(await api.get(`${path}?cursor=${encodeURIComponent(cursor)}`), 'invalid_cursor');
      }
    },
  );
});
