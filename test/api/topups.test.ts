import { OrderSchema } from '../../src/db/entities/all-entities';
import { payCheckout, resetSandboxControl, sandboxControl } from '../../src/providers/sandbox/sandbox-payments';
import { topupStateQuery, topupWorkflowId } from '../../src/contracts/topups-contract';
import { startHarness, type Harness } from '../helpers/harness';
import { call, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import {
  checkoutIdOf,
  PAYMENT_ENV,
  payThroughPage,
  reseller,
  sendCallback,
  waitForOrderStatus,
} from '../helpers/payments';

// Spec 4.2 (top-up), 2.5, 3.3 and 8 (top-up limits) with the sandbox hosted checkout, on real
// Postgres and Temporal. `long` has a window no test waits out; `short` expires in 2 s.
let long: Harness;
let short: Harness;

beforeAll(async () => {
  long = await startHarness({ ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '120' });
  short = await startHarness({ ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '2' });
});
// Each stop lets in-flight activities finish (the worker's shutdown grace): both at once, with room.
afterAll(async () => {
  await Promise.all([long?.stop(), short?.stop()]);
}, 180_000);
beforeEach(() => resetSandboxControl());

const topupRows = async (h: Harness, accountId: string) =>
  (await ledgerOf(h, accountId)).rows.filter((r) => r.type === 'topup');
const topupEvents = async (h: Harness, accountId: string) =>
  h.services.orm.em
    .fork()
    .execute<{ payload: any }[]>(`select payload from events where account_id = ? and type = 'topup.credited'`, [
      accountId,
    ]);

describe('creating a top-up (spec 4.2, 2.5)', () => {
  test('returns a pending top-up with a checkout URL; replay is reused; paid through the page it is credited once', async () => {
    const { api, accountId } = await reseller(long);
    const res = await api.post('/topup', { externalTopupId: 'top-1', amount: '25.50' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      orderId: expect.stringMatching(/^ord_/),
      externalTopupId: 'top-1',
      amount: '25.50',
      status: 'pending',
      checkoutUrl: expect.stringMatching(new RegExp(`^${long.baseUrl}/checkout/chk_[A-Za-z0-9_-]{32}$`)),
      paymentUrl: res.body.checkoutUrl,
      reused: false,
    });
    expect(res.headers.get('warning')).toBeNull();
    const replay = await api.post('/topup', { externalTopupId: 'top-1', amount: '25.50' });
    expect(replay.body).toEqual({ ...res.body, reused: true });

    const page = await fetch(res.body.checkoutUrl).then((r) => r.text());
    expect(page).toContain('25.50');
    expect(page).toContain('USDT');
    expect(page).toContain('sanctioned platforms');
    expect(await payThroughPage(res.body.checkoutUrl)).toContain('Payment received');

    const detail = await waitForOrderStatus(api, res.body.orderId, 'delivered');
    expect(detail).toMatchObject({ channel: 'topup', paymentUrl: null, amount: '25.50', external_order_id: 'top-1' });
    const l = await expectLedgerMatchesBalance(long, accountId);
    expect(l.balance).toBe('25.50');
    expect(await topupRows(long, accountId)).toEqual([
      { type: 'topup', amount: '25.50', balance_after: '25.50', order_id: res.body.orderId },
    ]);
    expect((await api.get('/transactions?type=topup')).body.transactions[0]).toMatchObject({
      amount: '25.50',
      balanceAfter: '25.50',
    });
    expect((await topupEvents(long, accountId)).map((e) => e.payload)).toEqual([
      { orderId: res.body.orderId, externalTopupId: 'top-1', amount: '25.50', currency: 'USDT' },
    ]);
    const list = await api.get('/orders');
    expect(list.body.orders[0]).toMatchObject({
      id: res.body.orderId,
      channel: 'topup',
      status: 'delivered',
      product_id: null,
    });
    // A replay after payment is still the same top-up, now without a link.
    expect((await api.post('/topup', { externalTopupId: 'top-1', amount: '25.50' })).body).toMatchObject({
      status: 'delivered',
      checkoutUrl: null,
      reused: true,
    });
  });

  test('the Idempotency-Key header is the key too; USDC is credited 1:1 to the USDT balance', async () => {
    const { api, accountId } = await reseller(long);
    const res = await api.post('/topup', { amount: '10', currency: 'USDC' }, { 'idempotency-key': 'hdr-1' });
    expect(res.body).toMatchObject({ externalTopupId: 'hdr-1', amount: '10.00', reused: false });
    expect(
      (await api.post('/topup', { amount: '10.00', currency: 'USDC', externalTopupId: 'hdr-1' })).body.reused,
    ).toBe(true);
    await payCheckout(
      long.services.orm.em.fork(),
      long.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(res.body.checkoutUrl),
    );
    await waitForOrderStatus(api, res.body.orderId, 'delivered');
    expect((await api.get('/balance')).body).toEqual({ balance: '10.00', currency: 'USDT' });
    expect((await topupEvents(long, accountId))[0].payload.currency).toBe('USDC');
    await expectLedgerMatchesBalance(long, accountId);
  });

  test.each([
    ['a different amount', { externalTopupId: 'conf', amount: '6.00' }],
    ['a different currency', { externalTopupId: 'conf', amount: '5.00', currency: 'USDC' }],
  ])('a replay with %s is 409 idempotency_conflict', async (_n, body) => {
    const { api } = await reseller(long);
    await api.post('/topup', { externalTopupId: 'conf', amount: '5.00' });
    const res = await api.post('/topup', body);
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('idempotency_conflict');
  });

  test.each([
    ['amount 0', { externalTopupId: 'v', amount: '0' }],
    ['amount 0.00', { externalTopupId: 'v', amount: '0.00' }],
    ['a negative amount', { externalTopupId: 'v', amount: '-1' }],
    ['three decimals', { externalTopupId: 'v', amount: '1.005' }],
    ['a number instead of a Decimal string', { externalTopupId: 'v', amount: 5 }],
    ['an unknown currency', { externalTopupId: 'v', amount: '5', currency: 'BTC' }],
    ['an externalTopupId over 64 characters', { externalTopupId: 'k'.repeat(65), amount: '5' }],
  ])('%s is 400 invalid_input', async (_n, body) => {
    const { api } = await reseller(long);
    const res = await api.post('/topup', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_input');
  });

  test('a legacy request without a key is accepted with Warning: 299 and idempotencyWarning', async () => {
    const { api } = await reseller(long);
    const res = await api.post('/topup', { amount: '3.00' });
    expect(res.status).toBe(200);
    expect(res.headers.get('warning')).toMatch(/^299 - "/);
    expect(res.body).toMatchObject({
      externalTopupId: null,
      status: 'pending',
      idempotencyWarning: expect.stringContaining('idempotency key'),
    });
    const again = await api.post('/topup', { amount: '3.00' });
    expect(again.body.orderId).not.toBe(res.body.orderId);
  });
});

describe('provider failures leave nothing behind (spec 4.2, 4.3 rule 8)', () => {
  test.each([
    ['502', 'error', 502, 'payment_provider_error'],
    ['a timeout', 'timeout', 504, 'payment_provider_timeout'],
  ] as const)(
    '%s is %d %s with no order; the same id works once the provider recovers',
    async (_n, fault, status, code) => {
      const { api, accountId } = await reseller(long);
      sandboxControl.fault = fault;
      const res = await api.post('/topup', { externalTopupId: `f-${fault}`, amount: '5.00' });
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ error: code, retryable: true });
      expect(await long.services.orm.em.fork().count(OrderSchema, { accountId })).toBe(0);
      expect((await api.get('/orders')).body.orders).toEqual([]);
      resetSandboxControl();
      const retry = await api.post('/topup', { externalTopupId: `f-${fault}`, amount: '5.00' });
      expect(retry.body).toMatchObject({ status: 'pending', reused: false });
    },
  );
});

describe('exactly-once credit (spec 3.3)', () => {
  test('the callback alone credits, even with the provider status endpoint failing', async () => {
    const { api, accountId } = await reseller(long);
    const res = await api.post('/topup', { externalTopupId: 'cb', amount: '7.00' });
    Object.assign(sandboxControl, { fault: 'error', faultOn: 'status' });
    await payCheckout(
      long.services.orm.em.fork(),
      long.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(res.body.checkoutUrl),
    );
    await waitForOrderStatus(api, res.body.orderId, 'delivered');
    expect((await expectLedgerMatchesBalance(long, accountId)).balance).toBe('7.00');
  });

  test('the status sync alone credits when no callback arrives', async () => {
    const { api, accountId } = await reseller(long);
    const res = await api.post('/topup', { externalTopupId: 'sync', amount: '8.00' });
    sandboxControl.suppressCallback = true;
    await payCheckout(
      long.services.orm.em.fork(),
      long.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(res.body.checkoutUrl),
    );
    await waitForOrderStatus(api, res.body.orderId, 'delivered');
    const state = await long.services.temporal.client.workflow
      .getHandle(topupWorkflowId(accountId, 'sync'))
      .query(topupStateQuery);
    expect(state.syncs).toBeGreaterThan(0);
    expect((await expectLedgerMatchesBalance(long, accountId)).balance).toBe('8.00');
  });

  test('callback and sync both arriving, and the callback retried, credit once', async () => {
    const { api, accountId } = await reseller(long);
    const res = await api.post('/topup', { externalTopupId: 'both', amount: '9.00' });
    const checkoutId = checkoutIdOf(res.body.checkoutUrl);
    // The provider's own callback, three retried copies of it and the status sync all race.
    await payCheckout(long.services.orm.em.fork(), long.config.PAYMENT_CALLBACK_SECRET, checkoutId);
    const retries = await Promise.all([1, 2, 3].map(() => sendCallback(long, checkoutId, res.body.orderId)));
    for (const r of retries) expect(r.status).toBe(200);
    await waitForOrderStatus(api, res.body.orderId, 'delivered');
    // A retry that lands after the credit changes nothing either.
    expect((await sendCallback(long, checkoutId, res.body.orderId)).status).toBe(200);
    expect(await topupRows(long, accountId)).toHaveLength(1);
    expect(await topupEvents(long, accountId)).toHaveLength(1);
    expect((await expectLedgerMatchesBalance(long, accountId)).balance).toBe('9.00');
  });

  test('a callback with a bad signature is refused and changes nothing', async () => {
    const { api, accountId } = await reseller(long);
    const res = await api.post('/topup', { externalTopupId: 'forged', amount: '4.00' });
    const forged = await call(`${long.baseUrl}/payments/callback`, {
      rawBody: JSON.stringify({
        checkoutId: checkoutIdOf(res.body.checkoutUrl),
        reference: res.body.orderId,
        status: 'paid',
      }),
      headers: { 'x-sandbox-signature': 'sha256=00' },
    });
    expect(forged.status).toBe(401);
    expect((await api.get(`/orders/${res.body.orderId}`)).body.status).toBe('pending');
    expect((await ledgerOf(long, accountId)).balance).toBe('0.00');
  });
});

describe('window, expiry and late payment (spec 3.3)', () => {
  test('an unpaid top-up expires, stops counting toward the unpaid limit, and a late payment is still credited', async () => {
    const { api, accountId } = await reseller(short);
    const res = await api.post('/topup', { externalTopupId: 'late', amount: '12.00' });
    const expired = await waitForOrderStatus(api, res.body.orderId, 'expired');
    expect(expired.paymentUrl).toBeNull();
    expect((await api.post('/topup', { externalTopupId: 'late', amount: '12.00' })).body).toMatchObject({
      status: 'expired',
      checkoutUrl: null,
      reused: true,
    });
    await payCheckout(
      short.services.orm.em.fork(),
      short.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(res.body.checkoutUrl),
    );
    await waitForOrderStatus(api, res.body.orderId, 'delivered');
    const l = await expectLedgerMatchesBalance(short, accountId);
    expect(l.balance).toBe('12.00');
    expect(await topupRows(short, accountId)).toHaveLength(1);
  });
});

describe('limits (spec 8)', () => {
  test('at most 5 unpaid top-ups: the 6th is 429 too_many_pending_topups until one is paid', async () => {
    const { api } = await reseller(long);
    const first = [];
    for (let i = 0; i < 5; i++) first.push(await api.post('/topup', { externalTopupId: `p-${i}`, amount: '1.00' }));
    expect(first.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const sixth = await api.post('/topup', { externalTopupId: 'p-5', amount: '1.00' });
    expect(sixth.status).toBe(429);
    expect(sixth.body.error).toBe('too_many_pending_topups');
    // A replay of an existing one is still answered.
    expect((await api.post('/topup', { externalTopupId: 'p-0', amount: '1.00' })).body.reused).toBe(true);
    await payThroughPage(first[0].body.checkoutUrl);
    await waitForOrderStatus(api, first[0].body.orderId, 'delivered');
    expect((await api.post('/topup', { externalTopupId: 'p-5', amount: '1.00' })).status).toBe(200);
  });

  test('unpaid top-ups that expired no longer count', async () => {
    const { api } = await reseller(short);
    for (let i = 0; i < 5; i++) await api.post('/topup', { externalTopupId: `e-${i}`, amount: '1.00' });
    await eventually(
      async () => (await api.post('/topup', { externalTopupId: 'e-5', amount: '1.00' })).status === 200,
      20_000,
      500,
    );
  });

  test('20 requests per hour per account, replays included, then 429 rate_limited with Retry-After', async () => {
    const { api } = await reseller(long);
    const statuses = [];
    for (let i = 0; i < 20; i++)
      statuses.push((await api.post('/topup', { externalTopupId: 'same', amount: '2.00' })).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const over = await api.post('/topup', { externalTopupId: 'same', amount: '2.00' });
    expect(over.status).toBe(429);
    expect(over.body.error).toBe('rate_limited');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
