import { Writable } from 'node:stream';
import { ConfigError, loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { rateLimitWaitMs } from '../../src/providers/reloadly/reloadly-client';
import { reloadlySettings } from '../../src/providers/reloadly/reloadly-settings';
import { ReloadlySupplier } from '../../src/providers/reloadly/reloadly-supplier';
import { SupplierPermanentError, SupplierTransientError } from '../../src/providers/supplier';
import { FAKE_CLIENT_ID, FAKE_CLIENT_SECRET, FakeReloadly, type Fault, type OrderFate } from '../fakes/reloadly';

// Issue 26 item 1: the Reloadly adapter against the contract fake, one supplier call at a time:
// how every documented answer maps onto the Supplier port (codes, transient, permanent), the
// token's life, rate limits, lost answers looked up by customIdentifier, and what reaches the log.
// The procurement workflow on top of it is in reloadly-procurement.test.ts.

const PRODUCTS = {
  apple10: { productId: 5, unitPrice: '10' },
  roblox25: { productId: 18, unitPrice: '25.00' },
  wrongPrice: { productId: 5, unitPrice: '11' },
  gone: { productId: 999, unitPrice: '10' },
};

let fake: FakeReloadly;
let lines: string[];
let keys = 0;
const key = () => `ord_test:${process.pid}:${++keys}`;

function supplier(opts: { timeoutMs?: number; secret?: string } = {}) {
  lines = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const settings = reloadlySettings({
    env: 'sandbox',
    clientId: FAKE_CLIENT_ID,
    clientSecret: opts.secret ?? FAKE_CLIENT_SECRET,
    authUrl: fake.url,
    apiUrl: `${fake.url}/`,
    timeoutMs: opts.timeoutMs ?? 1000,
    senderName: 'Wholesale tests',
    products: PRODUCTS,
  });
  return new ReloadlySupplier(settings, createLogger('debug', sink));
}

/** Nothing secret in the log: the client secret, a token, a card. */
function expectCleanLog() {
  const log = lines.join('');
  expect(log).not.toContain(FAKE_CLIENT_SECRET);
  expect(log).not.toMatch(/eyJfake\./);
  for (const tx of fake.orders) for (const c of tx.cards) expect(log).not.toContain(c.cardNumber);
}

async function failure(p: Promise<unknown>): Promise<SupplierTransientError | SupplierPermanentError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof SupplierTransientError || err instanceof SupplierPermanentError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  fake = await FakeReloadly.start();
});
afterAll(() => fake?.close());
beforeEach(() => fake.reset());
afterEach(() => expectCleanLog());

describe('a purchase (POST /orders, then the cards of its transaction)', () => {
  test('cards with a PIN become "<cardNumber> PIN <pinCode>", long numeric card numbers keep every digit, the cost is recorded', async () => {
    const s = supplier();
    const k = key();
    const result = await s.procure('roblox25', 2, k);
    const [tx] = fake.ordersFor(k);
    expect(fake.ordersFor(k)).toHaveLength(1);
    expect(tx).toMatchObject({ productId: 18, quantity: 2, unitPrice: 25 });
    // 19-digit card numbers are sent as JSON numbers (documented as integers): no digit is lost.
    expect(result.codes).toEqual(FakeReloadly.codesOf(tx));
    for (const code of result.codes) expect(code).toMatch(/^\d{19} PIN \d{4}$/);
    // 2 × 25 less 2 % plus the 0.30 fee = 49.30, that is 24.65 a card.
    expect(result.purchase).toEqual({
      supplier: 'reloadly',
      supplierProductId: '18',
      transactionId: String(tx.transactionId),
      supplierStatus: 'SUCCESSFUL',
      quantity: 2,
      totalCost: '49.300000',
      unitCost: '24.650000',
      currency: 'USD',
      faceValue: '25.00',
      faceCurrency: 'USD',
    });
  });

  test('a card without a PIN is its number; the token is asked for once and kept for later calls', async () => {
    const s = supplier();
    const first = await s.procure('apple10', 3, key());
    const second = await s.procure('apple10', 1, key());
    expect([...first.codes, ...second.codes]).toEqual(fake.orders.slice(-2).flatMap(FakeReloadly.codesOf));
    for (const code of first.codes) expect(code).toMatch(/^\d{16}$/);
    // 3 × 10 less 3 % plus 0.50 = 29.60: 9.866667 a card (rounded half up).
    expect(first.purchase).toMatchObject({ totalCost: '29.600000', unitCost: '9.866667', quantity: 3 });
    expect(fake.callsTo('token')).toHaveLength(1);
  });

  test('fewer cards than bought: what came is returned', async () => {
    fake.nextOrders({ cardsShort: 1 });
    const result = await supplier().procure('apple10', 3, key());
    expect(result.codes).toHaveLength(2);
    expect(result.purchase).toMatchObject({ quantity: 3 });
  });
});

describe('transaction statuses', () => {
  test('PENDING: transient and in flight, with the transaction; the next call under the same key finds it and buys nothing more', async () => {
    fake.nextOrders({ pendingReads: 2 });
    const s = supplier();
    const k = key();
    const first = await failure(s.procure('apple10', 1, k));
    expect(first).toBeInstanceOf(SupplierTransientError);
    expect(first).toMatchObject({
      inFlight: true,
      purchase: { supplierStatus: 'PENDING', transactionId: String(fake.orders.at(-1)!.transactionId) },
    });
    expect(first.message).toMatch(/is PENDING/);
    expect(await failure(s.procure('apple10', 1, k))).toMatchObject({
      inFlight: true,
      purchase: { supplierStatus: 'PENDING' },
    });
    const done = await s.procure('apple10', 1, k);
    expect(done.codes).toEqual(FakeReloadly.codesOf(fake.ordersFor(k)[0]));
    expect(fake.ordersFor(k)).toHaveLength(1);
    // The repeats were refused as CUSTOM_IDENTIFIER_ALREADY_USED, then looked up.
    expect(fake.callsTo('order').map((c) => c.status)).toEqual([200, 400, 400]);
  });

  test.each<[string, OrderFate, RegExp]>([
    ['FAILED', { status: 'FAILED' }, /transaction \d+ FAILED: no cards were delivered/],
    ['REFUNDED', { status: 'REFUNDED' }, /transaction \d+ REFUNDED/],
  ])('%s: permanent, with the transaction kept for support', async (_name, fate, message) => {
    fake.nextOrders(fate);
    const err = await failure(supplier().procure('apple10', 1, key()));
    expect(err).toBeInstanceOf(SupplierPermanentError);
    expect(err.message).toMatch(message);
    expect((err as SupplierPermanentError).purchase).toMatchObject({ supplierStatus: fate.status });
  });
});

describe("refusals are permanent and keep the supplier's reason", () => {
  test.each<[string, () => void, string, RegExp]>([
    [
      'insufficient balance',
      () => (fake.balance = 1),
      'apple10',
      /Reloadly refused the order: Insufficient balance.* \(INSUFFICIENT_BALANCE\)/,
    ],
    ['a price that is not a denomination', () => {}, 'wrongPrice', /Reloadly refused the order: Invalid price/],
    [
      'a product Reloadly no longer has',
      () => {},
      'gone',
      /Reloadly refused the order: The product was either not found or is no longer available/,
    ],
    [
      'a product we never mapped',
      () => {},
      'prod_unmapped',
      /prod_unmapped is not mapped to a Reloadly product \(RELOADLY_PRODUCTS\)/,
    ],
  ])('%s', async (_name, arrange, product, message) => {
    const balance = fake.balance;
    arrange();
    try {
      const err = await failure(supplier().procure(product, 1, key()));
      expect(err).toBeInstanceOf(SupplierPermanentError);
      expect(err.message).toMatch(message);
    } finally {
      fake.balance = balance;
    }
    expect(fake.orders.filter((o) => o.customIdentifier === `ord_test:${process.pid}:${keys}`)).toHaveLength(0);
  });

  test('refused credentials: permanent, naming the settings, never the secret', async () => {
    const err = await failure(supplier({ secret: 'not-the-secret-123' }).procure('apple10', 1, key()));
    expect(err).toBeInstanceOf(SupplierPermanentError);
    expect(err.message).toMatch(
      /refused our client credentials: Access Denied \(INVALID_CREDENTIALS\); check RELOADLY_CLIENT_ID, RELOADLY_CLIENT_SECRET and RELOADLY_ENV/,
    );
    expect(err.message).not.toContain('not-the-secret-123');
    expect(lines.join('')).not.toContain('not-the-secret-123');
  });
});

describe('the token', () => {
  test('401 TOKEN_EXPIRED: renewed once, the order placed once', async () => {
    const s = supplier();
    await s.procure('apple10', 1, key());
    const issued = fake.tokensIssued;
    fake.fail('order', { kind: 'token_expired' });
    const k = key();
    const result = await s.procure('apple10', 1, k);
    expect(result.codes).toHaveLength(1);
    expect(fake.tokensIssued).toBe(issued + 1);
    expect(fake.ordersFor(k)).toHaveLength(1);
  });

  test('renewed before it expires, by the expires_in it came with', async () => {
    let now = Date.now();
    const s = new ReloadlySupplier(
      reloadlySettings({
        env: 'sandbox',
        clientId: FAKE_CLIENT_ID,
        clientSecret: FAKE_CLIENT_SECRET,
        authUrl: fake.url,
        apiUrl: fake.url,
        timeoutMs: 1000,
        senderName: 'x',
        products: PRODUCTS,
      }),
      createLogger('silent'),
      () => now,
    );
    fake.expiresInSeconds = 3600;
    try {
      await s.procure('apple10', 1, key());
      now += 54 * 60_000; // within the hour, more than 5 minutes left: kept
      await s.procure('apple10', 1, key());
      expect(fake.callsTo('token')).toHaveLength(1);
      now += 2 * 60_000; // under 5 minutes left: renewed
      await s.procure('apple10', 1, key());
      expect(fake.callsTo('token')).toHaveLength(2);
    } finally {
      fake.expiresInSeconds = 86_400;
    }
  });
});

describe('rate limits', () => {
  test('429 with Retry-After: waited out inside the call, then the order is placed once', async () => {
    fake.fail('order', { kind: 'rate_limited', retryAfterSeconds: 1 });
    const k = key();
    const result = await supplier().procure('apple10', 1, k);
    expect(result.codes).toHaveLength(1);
    const [limited, placed] = fake.callsTo('order');
    expect(limited.status).toBe(429);
    expect(placed.at - limited.at).toBeGreaterThanOrEqual(1000);
    expect(fake.ordersFor(k)).toHaveLength(1);
  });

  test('429 asking for longer than a call may wait: transient with the hint, and no call reaches Reloadly before it is up', async () => {
    fake.fail('order', { kind: 'rate_limited', retryAfterSeconds: 120 });
    const s = supplier();
    const err = await failure(s.procure('apple10', 1, key()));
    expect(err).toBeInstanceOf(SupplierTransientError);
    expect((err as SupplierTransientError).retryAfterMs).toBe(120_000);
    expect((err as SupplierTransientError).inFlight).toBe(false);
    const calls = fake.calls.length;
    const again = await failure(s.procure('apple10', 1, key()));
    expect((again as SupplierTransientError).retryAfterMs).toBeGreaterThan(110_000);
    expect(fake.calls.length).toBe(calls);
  });

  test('X-RateLimit-Reset (UNIX seconds) is read when there is no Retry-After', () => {
    const now = 1_800_000_000_000;
    expect(rateLimitWaitMs(new Headers({ 'x-ratelimit-reset': String(now / 1000 + 7) }), now)).toBe(7000);
    expect(rateLimitWaitMs(new Headers({ 'retry-after': '3', 'x-ratelimit-reset': String(now / 1000 + 7) }), now)).toBe(
      3000,
    );
    expect(rateLimitWaitMs(new Headers({ 'retry-after': new Date(now + 4000).toUTCString() }), now)).toBe(4000);
    expect(rateLimitWaitMs(new Headers(), now)).toBeUndefined();
  });
});

describe('lost and unreadable answers: the order is looked up by its customIdentifier, never bought twice', () => {
  test.each<[string, Fault[], Fault[]]>([
    ['the connection dropped after the order was taken', [{ kind: 'drop_after_taking' }], []],
    ['a 502 after the order was taken', [{ kind: 'server_error', status: 502, afterTaking: true }], []],
    ['a body that is not JSON after the order was taken', [{ kind: 'garbage' }], []],
    ['an answer slower than RELOADLY_TIMEOUT_MS', [{ kind: 'slow', delayMs: 1500 }], []],
  ])('%s: the same call finds the order and returns its cards', async (_name, orderFaults, reportFaults) => {
    fake.fail('order', ...orderFaults).fail('report', ...reportFaults);
    const k = key();
    const result = await supplier({ timeoutMs: 700 }).procure('apple10', 2, k);
    expect(fake.ordersFor(k)).toHaveLength(1);
    expect(result.codes).toEqual(FakeReloadly.codesOf(fake.ordersFor(k)[0]));
    expect(fake.callsTo('report')).toHaveLength(1);
  });

  test('not in the report yet: transient in flight; the next call under the same key is refused as a repeat, looks it up and returns its cards', async () => {
    fake.fail('order', { kind: 'drop_after_taking' }).fail('report', { kind: 'stale' });
    const s = supplier();
    const k = key();
    const first = await failure(s.procure('apple10', 1, k));
    expect(first).toMatchObject({ inFlight: true });
    expect(first.message).toMatch(/no order under this identifier yet/);
    const result = await s.procure('apple10', 1, k);
    expect(result.codes).toEqual(FakeReloadly.codesOf(fake.ordersFor(k)[0]));
    expect(fake.ordersFor(k)).toHaveLength(1);
    expect(fake.callsTo('order').map((c) => c.status)).toEqual(['dropped', 400]);
  });

  test('a 503 before anything was taken: looked up, not found, transient in flight; the next call places it once', async () => {
    fake.fail('order', { kind: 'server_error', status: 503 });
    const s = supplier();
    const k = key();
    expect(await failure(s.procure('apple10', 1, k))).toMatchObject({ inFlight: true });
    expect(fake.ordersFor(k)).toHaveLength(0);
    expect((await s.procure('apple10', 1, k)).codes).toHaveLength(1);
    expect(fake.ordersFor(k)).toHaveLength(1);
  });

  test('cards that cannot be read after a successful order: transient in flight, with the transaction; no crash, logged without the body', async () => {
    fake.fail('cards', { kind: 'garbage' });
    const s = supplier();
    const k = key();
    const err = await failure(s.procure('apple10', 1, k));
    expect(err).toMatchObject({ inFlight: true, purchase: { supplierStatus: 'SUCCESSFUL' } });
    expect(lines.join('')).toMatch(/reloadly answer is not JSON/);
    expect(lines.join('')).not.toContain('<html>');
    expect((await s.procure('apple10', 1, k)).codes).toEqual(FakeReloadly.codesOf(fake.ordersFor(k)[0]));
    expect(fake.ordersFor(k)).toHaveLength(1);
  });
});

describe('configuration (SUPPLIER_PROVIDER=reloadly)', () => {
  const base = {
    SUPPLIER_PROVIDER: 'reloadly',
    RELOADLY_PRODUCTS: JSON.stringify({ prod_apple_gift_card_us_10: { productId: 5, unitPrice: 10 } }),
  };
  const problem = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('expected a ConfigError');
  };

  test('missing credentials name the variable', () => {
    expect(problem(base)).toMatch(
      /RELOADLY_CLIENT_ID: required with SUPPLIER_PROVIDER=reloadly[\s\S]*RELOADLY_CLIENT_SECRET: required/,
    );
    expect(problem({ ...base, RELOADLY_CLIENT_ID: 'id' })).not.toMatch(/RELOADLY_CLIENT_ID/);
  });

  test.each([
    ['missing', undefined, /RELOADLY_PRODUCTS: required/],
    ['not JSON', '{', /RELOADLY_PRODUCTS: not valid JSON/],
    [
      'a bad unitPrice',
      JSON.stringify({ p: { productId: 5, unitPrice: '10.005' } }),
      /RELOADLY_PRODUCTS: \[p\.unitPrice\] expected a positive Decimal/,
    ],
    ['an unknown field', JSON.stringify({ p: { productId: 5, unitPrice: 10, price: 3 } }), /RELOADLY_PRODUCTS: \[p\]/],
  ])('RELOADLY_PRODUCTS %s', (_name, products, message) => {
    const env: Record<string, string> = { ...base, RELOADLY_CLIENT_ID: 'id', RELOADLY_CLIENT_SECRET: 'secret' };
    if (products === undefined) delete env.RELOADLY_PRODUCTS;
    else env.RELOADLY_PRODUCTS = products;
    expect(problem(env)).toMatch(message);
  });

  test("production refuses Reloadly's sandbox, and offers reloadly in place of the built-in supplier", () => {
    const production = { ...base, NODE_ENV: 'production', RELOADLY_CLIENT_ID: 'id', RELOADLY_CLIENT_SECRET: 'secret' };
    expect(problem(production)).toMatch(
      /RELOADLY_ENV: Reloadly's sandbox must not run in production .*set RELOADLY_ENV=live/,
    );
    expect(problem({ NODE_ENV: 'production' })).toMatch(/set SUPPLIER_PROVIDER to none .* or reloadly/);
    const ok = loadConfig({
      ...base,
      RELOADLY_CLIENT_ID: 'id',
      RELOADLY_CLIENT_SECRET: 'secret',
      RELOADLY_ENV: 'live',
    });
    expect(ok.reloadlyProducts).toEqual({ prod_apple_gift_card_us_10: { productId: 5, unitPrice: '10' } });
    expect(
      reloadlySettings({ env: 'live', clientId: 'i', clientSecret: 's', timeoutMs: 1, senderName: 'x', products: {} }),
    ).toMatchObject({
      authUrl: 'https://auth.reloadly.com',
      apiUrl: 'https://giftcards.reloadly.com',
      audience: 'https://giftcards.reloadly.com',
    });
  });
});
