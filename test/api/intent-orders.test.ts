import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { CODE_RE } from '../../src/codes';
import { payCheckout, resetSandboxControl, sandboxControl } from '../../src/providers/sandbox/sandbox-payments';
import { orderStateQuery, orderWorkflowId } from '../../src/contracts/orders-contract';
import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV, payThroughPage, reseller, waitForOrderStatus } from '../helpers/payments';

// Spec 4.3 payment=intent (rules 3, 4, 8, 9, 10) and 3.1, with the sandbox hosted checkout.
let long: Harness;
let short: Harness;

beforeAll(async () => {
  long = await startHarness({ ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '120', LEVEL_THRESHOLDS: '30,5000,10000,50000' });
  short = await startHarness({ ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '2' });
});
afterAll(async () => {
  await long?.stop();
  await short?.stop();
});
beforeEach(() => resetSandboxControl());

const intent = (externalOrderId: string, productId = 'prod_chatgpt_plus_1m', qty = 1) => ({
  externalOrderId,
  productId,
  qty,
  payment: 'intent',
});

describe('intent orders (spec 3.1, 4.3)', () => {
  test('pending with checkoutUrl and no debit; paid at the checkout, delivered with codes; spending raises the level', async () => {
    const { api, accountId } = await reseller(long, '5.00');
    const res = await api.post('/orders', intent('i-1', 'prod_chatgpt_plus_1m', 2));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'pending',
      codes: [],
      amount: '36.00',
      reused: false,
      deliveryType: 'redemption',
      checkoutUrl: expect.stringMatching(/\/checkout\/chk_/),
    });
    expect(res.body.paymentUrl).toBe(res.body.checkoutUrl);
    expect((await ledgerOf(long, accountId)).balance).toBe('5.00');

    // Rule 10: GET /orders/{id} shows paymentUrl while pending; summaries never do.
    expect((await api.get(`/orders/${res.body.orderId}`)).body).toMatchObject({
      status: 'pending',
      paymentUrl: res.body.checkoutUrl,
      codes: [],
    });
    expect((await api.get('/orders')).body.orders[0]).not.toHaveProperty('paymentUrl');
    // Rule 3: a replay in balance mode returns the pending order without checkoutUrl, and debits nothing.
    const balanceReplay = await api.post('/orders', {
      externalOrderId: 'i-1',
      productId: 'prod_chatgpt_plus_1m',
      qty: 2,
      payment: 'balance',
    });
    expect(balanceReplay.body).toMatchObject({ status: 'pending', reused: true });
    expect(balanceReplay.body).not.toHaveProperty('checkoutUrl');
    expect(balanceReplay.body).not.toHaveProperty('paymentUrl');
    const intentReplay = await api.post('/orders', intent('i-1', 'prod_chatgpt_plus_1m', 2));
    expect(intentReplay.body).toMatchObject({ checkoutUrl: res.body.checkoutUrl, reused: true });

    await payThroughPage(res.body.checkoutUrl);
    const delivered = await waitForOrderStatus(api, res.body.orderId, 'delivered');
    expect(delivered.codes).toHaveLength(2);
    for (const c of delivered.codes) expect(c).toMatch(CODE_RE);
    expect(delivered.paymentUrl).toBeNull();
    expect((await api.post('/orders', intent('i-1', 'prod_chatgpt_plus_1m', 2))).body).toMatchObject({
      status: 'delivered',
      codes: delivered.codes,
      reused: true,
    });
    expect((await api.post('/orders', intent('i-1', 'prod_chatgpt_plus_1m', 2))).body).not.toHaveProperty(
      'checkoutUrl',
    );

    const l = await expectLedgerMatchesBalance(long, accountId);
    expect(l.balance).toBe('5.00');
    expect(l.rows.filter((r) => r.type === 'purchase')).toEqual([]);
    expect(l.spending).toBe('36.00');
    expect(l.level).toBe(2); // 36.00 spent + 5.00 balance crossed the 30.00 threshold
    const events = await long.services.orm.em
      .fork()
      .execute<{ type: string }[]>('select type from events where account_id = ?', [accountId]);
    expect(events.map((e) => e.type)).toEqual(['order.delivered']);
  });

  test('a direct-code intent order awaits payment, then is procured and delivered with gift card codes', async () => {
    const { api } = await reseller(long);
    const res = await api.post('/orders', intent('i-gift', 'prod_robux_800', 1));
    expect(res.body).toMatchObject({
      status: 'pending',
      fulfillmentStatus: 'awaiting_payment',
      redeemUrl: null,
      codes: [],
    });
    await payCheckout(
      long.services.orm.em.fork(),
      long.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(res.body.checkoutUrl),
    );
    const delivered = await waitForOrderStatus(api, res.body.orderId, 'delivered');
    expect(delivered).toMatchObject({ fulfillmentStatus: 'delivered', fulfilledQuantity: 1, redeemUrl: null });
    expect(delivered.codes).toHaveLength(1);
  });

  test('npx wholesale sandbox pay pays as the payer would', async () => {
    const { api } = await reseller(long);
    const res = await api.post('/orders', intent('i-cli'));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(resolve(__dirname, '..', '..'), 'bin', 'wholesale.js'), 'sandbox', 'pay', res.body.orderId],
      {
        env: {
          ...process.env,
          DATABASE_URL: long.databaseUrl,
          PAYMENT_CALLBACK_SECRET: long.config.PAYMENT_CALLBACK_SECRET,
        },
      },
    );
    expect(JSON.parse(stdout)).toMatchObject({ orderId: res.body.orderId, checkout: 'paid' });
    await waitForOrderStatus(api, res.body.orderId, 'delivered');
  });

  test('rule 4: a pending order whose checkout was abandoned gets a fresh checkoutUrl on an intent replay', async () => {
    const { api } = await reseller(long);
    const res = await api.post('/orders', intent('i-repair'));
    const page = await fetch(res.body.checkoutUrl).then((r) => r.text());
    const abandon = /<form method="post" action="([^"]+\/abandon)"/.exec(page)![1];
    await fetch(new URL(abandon, res.body.checkoutUrl), { method: 'POST' });
    await eventually(async () => (await api.get(`/orders/${res.body.orderId}`)).body.paymentUrl === null);
    const repaired = await api.post('/orders', intent('i-repair'));
    expect(repaired.body).toMatchObject({
      orderId: res.body.orderId,
      status: 'pending',
      reused: true,
      checkoutUrl: expect.stringMatching(/\/checkout\/chk_/),
    });
    expect(repaired.body.checkoutUrl).not.toBe(res.body.checkoutUrl);
    expect((await api.get(`/orders/${res.body.orderId}`)).body.paymentUrl).toBe(repaired.body.checkoutUrl);
    await payThroughPage(repaired.body.checkoutUrl);
    await waitForOrderStatus(api, res.body.orderId, 'delivered');
  });

  test.each([
    ['502', 'error', 502, 'payment_provider_error'],
    ['a timeout', 'timeout', 504, 'payment_provider_timeout'],
  ] as const)(
    'rule 8: provider %s (%s) is %d %s and leaves no order; retrying the same id works',
    async (_n, fault, status, code) => {
      const { api } = await reseller(long);
      sandboxControl.fault = fault;
      const res = await api.post('/orders', intent(`i-${fault}`));
      expect(res.status).toBe(status);
      expect(res.body.error).toBe(code);
      expect((await api.get(`/orders?externalOrderId=i-${fault}`)).body.orders).toEqual([]);
      resetSandboxControl();
      expect((await api.post('/orders', intent(`i-${fault}`))).body).toMatchObject({
        status: 'pending',
        reused: false,
      });
    },
  );

  test('stock checks hold in intent mode, and a pending intent order counts as outstanding', async () => {
    const { api } = await reseller(long);
    await long.services.orm.em
      .fork()
      .execute(`update products set limited_remaining = 2 where id = 'prod_chatgpt_team_1m'`);
    const first = await api.post('/orders', intent('i-lim-1', 'prod_chatgpt_team_1m', 2));
    expect(first.body.status).toBe('pending');
    const second = await api.post('/orders', intent('i-lim-2', 'prod_chatgpt_team_1m', 1));
    expect(second.body.error).toBe('out_of_stock');
    expect((await api.get('/products/prod_chatgpt_team_1m/availability?qty=1')).body.available).toBe(false);
  });

  test('the workflow syncs the provider at most once per PAYMENT_SYNC_SECONDS while pending', async () => {
    const { api, accountId } = await reseller(long);
    await api.post('/orders', intent('i-sync'));
    const handle = long.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'i-sync'));
    const started = Date.now();
    const state = await eventually(async () => {
      const s = await handle.query(orderStateQuery);
      return (s.payment?.syncs ?? 0) >= 2 ? s : undefined;
    });
    const elapsedSeconds = (Date.now() - started) / 1000;
    expect(state.payment!.syncs).toBeLessThanOrEqual(
      Math.ceil(elapsedSeconds / Number(PAYMENT_ENV.PAYMENT_SYNC_SECONDS)) + 1,
    );
  });
});

describe('window, expiry and late payment (spec 3.1)', () => {
  test('an unpaid intent order expires after the window; a payment after expiry is reconciled and delivered anyway', async () => {
    const { api, accountId } = await reseller(short);
    const res = await api.post('/orders', intent('late-1'));
    const expired = await waitForOrderStatus(api, res.body.orderId, 'expired');
    expect(expired).toMatchObject({ paymentUrl: null, codes: [] });
    await payCheckout(
      short.services.orm.em.fork(),
      short.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(res.body.checkoutUrl),
    );
    const delivered = await waitForOrderStatus(api, res.body.orderId, 'delivered');
    expect(delivered.codes).toHaveLength(1);
    expect((await expectLedgerMatchesBalance(short, accountId)).balance).toBe('0.00');
  });

  test('a direct-code order expires with fulfillmentStatus expired', async () => {
    const { api } = await reseller(short);
    const res = await api.post('/orders', intent('late-gift', 'prod_apple_gift_card_us_25'));
    const expired = await waitForOrderStatus(api, res.body.orderId, 'expired');
    expect(expired.fulfillmentStatus).toBe('expired');
  });
});
