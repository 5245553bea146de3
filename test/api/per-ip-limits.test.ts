import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { registry } from '../../src/metrics/registry';
import { consoleSession, freshCode, roomInStep, signInWith, staffMember, totp } from '../helpers/console';
import { startHarness, type Harness } from '../helpers/harness';
import { freshRateWindow } from '../helpers/redemption';

// Budgets per client address (README, Operations: client addresses and TRUST_PROXY): failed
// sign-ins count per email from one address and per address, so a guesser locks out only their
// own address; X-Forwarded-For names the client only when the peer is a trusted proxy; a checkout
// link's page has its own budget per address (429 with Retry-After, a page for people).
let h: Harness;

beforeAll(async () => {
  h = await startHarness(
    // 127.0.0.1 is the proxy; 127.0.0.2, another loopback address, is a client that is not.
    { TRUST_PROXY: '127.0.0.1', SIGN_IN_RATE_LIMIT_PER_IP: '8', CHECKOUT_RATE_LIMIT_PER_MINUTE: '3' },
    { worker: false },
  );
});
afterAll(() => h?.stop());

const counter = async (name: string, labels: Record<string, string>) => {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
  return Number(value ?? 0);
};

/** A GET from the local address `from` (a peer on loopback), optionally naming a client in X-Forwarded-For. */
function getFrom(
  from: string,
  path: string,
  forwardedFor?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(path, h.baseUrl);
  return new Promise((ok, fail) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        localAddress: from,
        headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () => ok({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', fail);
    req.end();
  });
}

/** A checkout of the sandbox provider, made through its API as the service makes one. */
async function sandboxCheckout(): Promise<string> {
  const res = await fetch(`${h.baseUrl}/sandbox-pay/v1/checkouts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.config.PAYMENT_CALLBACK_SECRET}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      reference: `ref-${randomBytes(3).toString('hex')}`,
      amount: '25.00',
      currency: 'USDT',
      description: 'limits',
      callbackUrl: `${h.baseUrl}/payments/callback`,
    }),
  });
  return new URL((await res.json()).url).pathname;
}

describe('console sign-in: failures count per email from one address, and per address', () => {
  test('six wrong sign-ins from one address do not stop the right person signing in from another', async () => {
    const m = await staffMember(h, 'support');
    await freshRateWindow(15 * 60, 45);
    const failuresBefore = await counter('wholesale_sign_in_failures_total', { area: 'console' });
    const guesser = consoleSession(h, '203.0.113.66');
    for (let i = 0; i < 5; i++)
      expect((await signInWith(guesser, { ...m, password: `guess-${i}-guess-guess` }, '123456')).status).toBe(401);
    const sixth = await signInWith(guesser, { ...m, password: 'guess-6-guess-guess' }, '123456');
    expect([sixth.status, sixth.text]).toEqual([429, expect.stringContaining('Too many sign-in attempts')]);
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    // From the guesser's address even the right password and code wait for the window to pass.
    await roomInStep(12);
    expect((await signInWith(guesser, m, totp(m.secret))).status).toBe(429);

    const owner = consoleSession(h, '198.51.100.20');
    const ok = await signInWith(owner, m, await freshCode(m));
    expect([ok.status, ok.location]).toEqual([303, '/console']);
    expect((await owner.get('/console')).status).toBe(200);
    expect(await counter('wholesale_sign_in_failures_total', { area: 'console' })).toBe(failuresBefore + 5);
  });

  test('one address guessing many emails is stopped after SIGN_IN_RATE_LIMIT_PER_IP failures; other addresses are not', async () => {
    const m = await staffMember(h, 'viewer');
    await freshRateWindow(15 * 60, 45);
    const limitedBefore = await counter('wholesale_rate_limited_total', { limit: 'console-sign-in' });
    const sprayer = '203.0.113.99';
    for (let i = 0; i < 8; i++) {
      const probe = {
        email: `probe-${i}-${randomBytes(3).toString('hex')}@example.com`,
        password: 'guess-guess-guess',
      };
      expect((await signInWith(consoleSession(h, sprayer), probe, '123456')).status).toBe(401);
    }
    await roomInStep(12);
    expect((await signInWith(consoleSession(h, sprayer), m, totp(m.secret))).status).toBe(429);
    expect(await counter('wholesale_rate_limited_total', { limit: 'console-sign-in' })).toBe(limitedBefore + 1);
    expect((await signInWith(consoleSession(h, '198.51.100.21'), m, await freshCode(m))).status).toBe(303);
  });
});

describe('TRUST_PROXY and the checkout page budget', () => {
  test('a checkout page answers CHECKOUT_RATE_LIMIT_PER_MINUTE views per client, then 429 with Retry-After as a page', async () => {
    const path = await sandboxCheckout();
    await freshRateWindow(60, 20);
    for (let i = 0; i < 3; i++) expect((await getFrom('127.0.0.1', path, '192.0.2.10')).status).toBe(200);
    const limited = await getFrom('127.0.0.1', path, '192.0.2.10');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.body).toContain('Too many requests');
    // Another payer's view is theirs to make.
    const other = await getFrom('127.0.0.1', path, '192.0.2.11');
    expect([other.status, other.body]).toEqual([200, expect.stringContaining('data-testid="amount">25.00<')]);
  });

  test('X-Forwarded-For names the client only when the peer is a trusted proxy', async () => {
    await freshRateWindow(60, 20);
    // Through the trusted proxy every forwarded client has its own budget.
    for (const client of ['192.0.2.20', '192.0.2.21', '192.0.2.22', '192.0.2.23']) {
      for (let i = 0; i < 3; i++)
        expect((await getFrom('127.0.0.1', '/checkout/chk_unknown', client)).status).toBe(404);
    }
    // From a peer that is not trusted the header is ignored: whatever it claims, the peer's address counts.
    for (let i = 0; i < 3; i++)
      expect((await getFrom('127.0.0.2', '/checkout/chk_unknown', `192.0.2.${30 + i}`)).status).toBe(404);
    expect((await getFrom('127.0.0.2', '/checkout/chk_unknown', '192.0.2.40')).status).toBe(429);
    expect((await getFrom('127.0.0.2', '/checkout/chk_unknown')).status).toBe(429);
  });
});
