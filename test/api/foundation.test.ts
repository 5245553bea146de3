import { connect } from 'node:net';
import { DECIMAL_RE } from '../../src/domain/money';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client } from '../helpers/http';
import { answersOn } from '../helpers/raw-http';
import { freshRateWindow } from '../helpers/redemption';

// Spec parts 2.1, 2.6, 2.7, 2.11, 4.1, 4.2 (balance), 5 and 8 (request rate), over real HTTP on
// real Postgres and Temporal.
let h: Harness;
let key: string;

beforeAll(async () => {
  h = await startHarness({ RATE_LIMIT_PER_MINUTE: '40' });
  ({ apiKey: key } = await h.account('25.00'));
});
afterAll(() => h?.stop());

const errorShape = (code: string) => ({
  error: code,
  message: expect.any(String),
  requestId: expect.any(String),
  retryable: expect.any(Boolean),
});

describe('authentication (spec 5) and the error body (spec 2.11)', () => {
  test.each([
    ['no header', {}],
    ['a wrong key', { authorization: 'Bearer wsk_notARealKeyAtAll000000000000000' }],
    ['a malformed header', { authorization: 'Basic abc' }],
  ])('%s is 401 unauthorized with the error body and X-Request-Id', async (_name, headers) => {
    const res = await call(`${h.apiUrl}/products`, { headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(errorShape('unauthorized'));
    expect(res.headers.get('x-request-id')).toBe(res.body.requestId);
  });

  test('an unknown route is 404 not_found in the error body', async () => {
    const res = await call(`${h.apiUrl}/nope`, { key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(errorShape('not_found'));
    const outside = await call(`${h.baseUrl}/elsewhere`);
    expect(outside.status).toBe(404);
    expect(outside.body.error).toBe('not_found');
  });

  test('malformed JSON is 400 invalid_input', async () => {
    const res = await call(`${h.apiUrl}/orders`, { key, rawBody: '{"externalOrderId": ' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorShape('invalid_input'));
  });

  test('every response carries X-Request-Id, and a caller-supplied one is echoed', async () => {
    const res = await call(`${h.apiUrl}/balance`, { key, headers: { 'x-request-id': 'my-trace-12345' } });
    expect(res.headers.get('x-request-id')).toBe('my-trace-12345');
  });
});

describe('catalog (spec 2.1, 4.1)', () => {
  test('GET /products lists products at the caller level with every field, the test product hidden', async () => {
    const res = await client(h.apiUrl, key).get('/products');
    expect(res.status).toBe(200);
    const ids = res.body.products.map((p: any) => p.id);
    expect(ids).not.toContain('prod_api_order_test');
    expect(ids).toEqual(
      expect.arrayContaining(['prod_chatgpt_plus_1m', 'prod_apple_gift_card_us_10', 'prod_robux_400']),
    );
    for (const p of res.body.products) {
      expect(Object.keys(p).sort()).toEqual(
        [
          'available',
          'availabilityStatus',
          'currency',
          'deliveryMode',
          'deliveryType',
          'denomination',
          'faceCurrency',
          'fulfillmentMode',
          'id',
          'inStock',
          'name',
          'nameEn',
          'price',
          'productGroupId',
          'redeemFields',
          'redeemFieldsEn',
          'region',
          'retailPrice',
          'slug',
          'stock',
          'stockCapped',
          'stockMode',
        ].sort(),
      );
      expect(p.price).toMatch(DECIMAL_RE);
      expect(p.retailPrice).toMatch(DECIMAL_RE);
      if (p.deliveryType === 'direct_code') expect(p.redeemFields).toEqual([]);
      if (p.stockMode !== 'inventory') expect(p.stock).toBeNull();
    }
    const groups = new Set(res.body.products.map((p: any) => p.productGroupId).filter(Boolean));
    expect([...groups].sort()).toEqual(['apple-gift-card-us', 'roblox-gift-card-us', 'robux']);
  });

  test('the test product is readable by id, and unknown ids are 404', async () => {
    const api = client(h.apiUrl, key);
    const test = await api.get('/products/prod_api_order_test');
    expect(test.status).toBe(200);
    expect(test.body).toMatchObject({
      id: 'prod_api_order_test',
      price: '0.01',
      retailPrice: '0.01',
      deliveryMode: 'test_code_only',
    });
    const missing = await api.get('/products/prod_nope');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('not_found');
    // A productGroupId is never a product id.
    expect((await api.get('/products/robux')).status).toBe(404);
  });

  test('prices follow the caller level; retailPrice stays Lv1', async () => {
    const rich = await h.account('0');
    await h.services.orm.em.fork().execute('update accounts set level = 3 where id = ?', [rich.accountId]);
    const lv3 = await client(h.apiUrl, rich.apiKey).get('/products/prod_chatgpt_plus_1m');
    const lv1 = await client(h.apiUrl, key).get('/products/prod_chatgpt_plus_1m');
    expect(lv1.body).toMatchObject({ price: '18.00', retailPrice: '18.00' });
    expect(lv3.body).toMatchObject({ price: '17.28', retailPrice: '18.00' });
  });

  describe('availability (spec 2.7)', () => {
    test.each([['0'], ['1001'], ['abc'], ['1.5']])('qty=%s is 400 invalid_input', async (qty) => {
      const res = await client(h.apiUrl, key).get(`/products/prod_chatgpt_plus_1m/availability?qty=${qty}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_input');
    });

    test('returns every field, defaulting qty to 1', async () => {
      const res = await client(h.apiUrl, key).get('/products/prod_apple_gift_card_us_25/availability');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        productId: 'prod_apple_gift_card_us_25',
        qty: 1,
        available: true,
        stockMode: 'on_demand',
        productGroupId: 'apple-gift-card-us',
        denomination: '25',
        faceCurrency: 'USD',
        region: 'US',
        deliveryType: 'direct_code',
        unitPrice: '24.50',
        checkedAt: expect.any(Number),
        availabilityStatus: 'available',
        deliveryMode: 'automatic',
      });
      expect(Math.abs(res.body.checkedAt - Date.now() / 1000)).toBeLessThan(30);
    });

    test('the test product reports test_code_only', async () => {
      const res = await client(h.apiUrl, key).get('/products/prod_api_order_test/availability?qty=1');
      expect(res.body).toMatchObject({ deliveryMode: 'test_code_only', unitPrice: '0.01', available: true });
    });

    test('limited stock subtracts nothing it does not know and is unavailable beyond the hidden count', async () => {
      const res = await client(h.apiUrl, key).get('/products/prod_chatgpt_team_1m/availability?qty=1000');
      expect(res.body).toMatchObject({ stockMode: 'limited', available: false });
      const ok = await client(h.apiUrl, key).get('/products/prod_chatgpt_team_1m/availability?qty=10');
      expect(ok.body.available).toBe(true);
    });

    test('unknown product is 404', async () => {
      expect((await client(h.apiUrl, key).get('/products/nope/availability')).status).toBe(404);
    });
  });
});

describe('balance (spec 2.6)', () => {
  test('GET /balance returns the account balance as a Decimal', async () => {
    const res = await client(h.apiUrl, key).get('/balance');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ balance: '25.00', currency: 'USDT' });
  });
});

describe("scope (spec 5.5): another account never sees this account's data", () => {
  test('orders and ledgers are per account', async () => {
    const other = await h.account('5.00');
    const mine = await client(h.apiUrl, key).post('/orders', {
      externalOrderId: 'scope-1',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    expect(mine.status).toBe(200);
    const theirs = client(h.apiUrl, other.apiKey);
    const detail = await theirs.get(`/orders/${mine.body.orderId}`);
    expect(detail.status).toBe(404);
    expect(detail.body.error).toBe('not_found');
    expect((await theirs.get('/orders')).body.orders).toEqual([]);
    expect((await theirs.get('/orders?externalOrderId=scope-1')).body.orders).toEqual([]);
    const tx = (await theirs.get('/transactions')).body.transactions;
    expect(tx.map((t: any) => t.order_id)).not.toContain(mine.body.orderId);
    expect((await theirs.get('/balance')).body.balance).toBe('5.00');
    // The same externalOrderId is independent per account.
    const again = await theirs.post('/orders', {
      externalOrderId: 'scope-1',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    expect(again.body.reused).toBe(false);
    expect(again.body.orderId).not.toBe(mine.body.orderId);
  });
});

describe('service endpoints', () => {
  test('the OpenAPI 3.1 document is generated from the route schemas', async () => {
    const res = await call(`${h.apiUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.servers).toEqual([{ url: h.baseUrl }]);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/wholesale/v1/products',
        '/wholesale/v1/products/{id}',
        '/wholesale/v1/products/{id}/availability',
        '/wholesale/v1/balance',
        '/wholesale/v1/orders',
        '/wholesale/v1/orders/{id}',
        '/wholesale/v1/transactions',
      ]),
    );
    expect(res.body.paths['/wholesale/v1/orders'].post.requestBody).toBeDefined();
  });

  test('GET /healthz answers', async () => {
    const res = await call(`${h.baseUrl}/healthz`);
    expect(res).toMatchObject({ status: 200, body: { ok: true } });
  });

  test("a keep-alive connection left idle past Node's 5 s default is still answered (HTTP_KEEP_ALIVE_SECONDS, 65 s)", async () => {
    // A client pool keeps a connection for as long as the server's Keep-Alive hint allows. A
    // server that closes first races the client's next request on it, and a POST sent into that
    // close fails with a reset the client cannot tell from a lost order.
    const socket = connect(Number(new URL(h.baseUrl).port), '127.0.0.1');
    const answers = answersOn(socket);
    const get = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n';
    socket.write(get);
    const first = await answers.next();
    expect(first).toMatch(/^HTTP\/1\.1 200 /);
    expect(first.toLowerCase()).toContain('keep-alive: timeout=65');
    await new Promise((r) => setTimeout(r, 6000));
    expect(socket.destroyed).toBe(false);
    socket.write(get);
    expect(await answers.next()).toMatch(/^HTTP\/1\.1 200 /);
    socket.destroy();
  }, 20_000);
});

describe('rate limit (spec 8): per key, shared through Postgres', () => {
  test('X-RateLimit-* headers count down and the limit answers 429 rate_limited with Retry-After', async () => {
    // The window is fixed: 46 requests that straddle its end split their count between two windows.
    await freshRateWindow();
    const { apiKey } = await h.account('0');
    const api = client(h.apiUrl, apiKey);
    const first = await api.get('/balance');
    expect(first.headers.get('x-ratelimit-limit')).toBe('40');
    expect(Number(first.headers.get('x-ratelimit-remaining'))).toBeLessThanOrEqual(39);
    expect(Number(first.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    const results = await Promise.all(Array.from({ length: 45 }, () => api.get('/balance')));
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(5);
    expect(limited[0].body).toEqual(errorShape('rate_limited'));
    expect(limited[0].body.retryable).toBe(true);
    expect(Number(limited[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Another key keeps its own budget.
    expect((await client(h.apiUrl, key).get('/balance')).status).toBe(200);
  });
});
