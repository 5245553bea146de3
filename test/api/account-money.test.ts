import { adjustBalance } from '../../src/services/payments/admin';
import { AccountSession, shownKey, signedUp } from '../helpers/account-session';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV, payThroughPage } from '../helpers/payments';
import { startReceiver, verifySignature, type Receiver } from '../helpers/webhook-receiver';

// Issue 18, money, orders and the webhook in the account area, through the same services as the
// API: a top-up from the area counts against the same hourly quota as POST /topup (spec 8,
// "account area, REST and MCP"), is paid at the hosted checkout and lands in the balance and the
// ledger; orders list like GET /orders and show codes only on an explicit reveal; the webhook
// form has PUT /webhook's rules, shows the secret once, sends a test event and retries a delivery
// that gave up.
const TOPUPS_PER_HOUR = 4;
let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    PAYMENT_WINDOW_SECONDS: '120',
    TOPUP_RATE_LIMIT_PER_HOUR: String(TOPUPS_PER_HOUR),
    SIGN_UP_RATE_LIMIT_PER_IP: '1000',
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    WEBHOOK_MAX_ATTEMPTS: '1',
    WEBHOOK_TIMEOUT_MS: '1000',
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.stop();
});

async function withKey(h: Harness) {
  const user = await signedUp(h);
  const made = await user.session.submit('/account/keys', '/account/keys', { name: 'api' });
  const key = shownKey(made.text);
  return { ...user, key, api: client(h.apiUrl, key) };
}

/** Posts the overview's top-up form (with the nonce that page rendered, unless one is given). */
async function topUp(session: AccountSession, amount: string, currency = 'USDT', nonce?: string) {
  const page = await session.get('/account');
  const rendered = /name="nonce" value="([^"]+)"/.exec(page.text)![1];
  return {
    res: await session.post('/account/topup', { amount, currency, nonce: nonce ?? rendered }),
    nonce: nonce ?? rendered,
  };
}

test('a top-up from the area goes to the hosted checkout, is credited once paid, and shows in the balance and the ledger', async () => {
  const { session, accountId, api } = await withKey(h);
  const { res } = await topUp(session, '25.50', 'USDC');
  expect(res.status).toBe(303);
  const orderPage = await session.get(res.location!);
  expect(orderPage.text).toContain('sanctioned platforms');
  const checkoutUrl = /href="([^"]+)" data-testid="pay-link"/.exec(orderPage.text)![1];
  expect(checkoutUrl).toContain('/checkout/');
  const orderId = res.location!.split('/').pop()!;
  expect((await api.get(`/orders/${orderId}`)).body).toMatchObject({
    channel: 'topup',
    status: 'pending',
    amount: '25.50',
    currency: 'USDC',
  });

  expect(await payThroughPage(checkoutUrl)).toContain('Payment received');
  await eventually(async () => (await api.get('/balance')).body.balance === '25.50');
  const overview = await session.get('/account');
  expect(overview.text).toMatch(/data-testid="balance">25\.50</);
  expect(overview.text).toMatch(
    /data-testid="ledger-amount">25\.50<\/td>\s*<td[^>]*data-testid="ledger-balance-after">25\.50</,
  );
  const ledger = await session.get('/account/ledger');
  expect(ledger.text).toContain(`/account/orders/${orderId}`);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([{ type: 'topup', amount: '25.50', balance_after: '25.50', order_id: orderId }]);
  // Paid: the detail page no longer offers the checkout.
  expect((await session.get(`/account/orders/${orderId}`)).text).not.toContain('data-testid="pay-link"');
});

test(`spec 8: the area shares the ${TOPUPS_PER_HOUR}/hour top-up quota with POST /topup; a resent form is the same top-up`, async () => {
  const { session, api, accountId } = await withKey(h);
  const first = await topUp(session, '5.00');
  const again = await topUp(session, '5.00', 'USDT', first.nonce);
  expect(again.res.location).toBe(first.res.location);
  expect((await api.post('/topup', { externalTopupId: 'rest-1', amount: '6.00' })).status).toBe(200);
  expect((await topUp(session, '7.00')).res.status).toBe(303);

  const rest = await api.post('/topup', { externalTopupId: 'rest-2', amount: '8.00' });
  expect(rest.status).toBe(429);
  expect(rest.body.error).toBe('rate_limited');
  const area = await topUp(session, '9.00');
  expect(area.res.status).toBe(429);
  expect(area.res.text).toContain(`At most ${TOPUPS_PER_HOUR} top-up requests per hour. Please wait`);
  expect(area.res.text).toContain('value="9.00"');
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute("select count(*)::int as n from orders where account_id = ? and kind = 'topup'", [accountId]);
  expect(n).toBe(3);
  await expectLedgerMatchesBalance(h, accountId);
});

test('a top-up form with a bad amount is refused in plain words and creates nothing', async () => {
  const { session, accountId } = await withKey(h);
  for (const amount of ['', 'ten', '1.234', '0.00', '-5']) {
    const { res } = await topUp(session, amount);
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/Please check “Amount”|amount must be greater than 0/);
  }
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute('select count(*)::int as n from orders where account_id = ?', [accountId]);
  expect(n).toBe(0);
});

test('orders list as GET /orders without codes; the detail page shows codes only after "Reveal codes"', async () => {
  const { session, accountId, api } = await withKey(h);
  await adjustBalance(h.services.orm.em.fork(), {
    accountId,
    amount: '40.00',
    note: 'test funding',
    levelThresholds: h.config.LEVEL_THRESHOLDS,
  });
  const order = await api.post('/orders', { externalOrderId: 'area-1', productId: 'prod_chatgpt_plus_1m', qty: 2 });
  expect(order.body.codes).toHaveLength(2);

  const list = await session.get('/account/orders');
  expect(list.text).toContain(order.body.orderId);
  expect(list.text).toContain('area-1');
  const detail = await session.get(`/account/orders/${order.body.orderId}`);
  expect(detail.text).toContain('2 codes delivered.');
  for (const text of [list.text, detail.text]) for (const code of order.body.codes) expect(text).not.toContain(code);

  expect((await session.post(`/account/orders/${order.body.orderId}/codes`, { _csrf: 'wrong' })).status).toBe(403);
  const revealed = await session.post(`/account/orders/${order.body.orderId}/codes`);
  expect(revealed.status).toBe(200);
  expect(revealed.headers.get('cache-control')).toBe('no-store');
  const shown = [...revealed.text.matchAll(/data-testid="code">([^<]+)</g)].map((m) => m[1]);
  expect(shown).toEqual(order.body.codes);
  expect((await session.get('/account/orders/ord_does_not_exist')).status).toBe(404);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.balance).toBe('4.00');
});

test('the webhook form: PUT /webhook rules, secret shown once, a signed test event, and a retry of a delivery that gave up', async () => {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const { session, api, accountId } = await withKey(h);

  const refused = await session.submit('/account/webhook', '/account/webhook', { url: 'ftp://example.com/hook' });
  expect(refused.status).toBe(400);
  expect(refused.text).toContain('Invalid webhook url');

  const saved = await session.submit('/account/webhook', '/account/webhook', { url: receiver.url });
  expect(saved.status).toBe(200);
  expect(saved.headers.get('cache-control')).toBe('no-store');
  const secret = /data-testid="webhook-secret">(whsec_[A-Za-z0-9_-]+)</.exec(saved.text)![1];
  expect((await session.get('/account/webhook')).text).not.toContain(secret);
  expect((await api.get('/webhook')).body).toEqual({ url: receiver.url });

  const sent = await session.post('/account/webhook/test');
  expect(sent.status).toBe(303);
  const [got] = await receiver.waitFor(1);
  expect(got.body.event).toBe('webhook.test');
  expect(verifySignature(secret, got.raw, got.headers['x-wholesale-signature'])).toBe(true);
  const ok = await eventually(async () => {
    const page = await session.get('/account/webhook');
    return page.text.includes('data-testid="delivery-status">succeeded<') ? page : undefined;
  });
  expect(ok.text).not.toContain('data-testid="retry"');

  // One attempt allowed (WEBHOOK_MAX_ATTEMPTS=1): a 500 leaves the delivery failed, with a retry button.
  receiver.script([500]);
  await session.post('/account/webhook/test');
  const failed = await eventually(async () => {
    const page = await session.get('/account/webhook');
    return page.text.includes('data-testid="delivery-status">failed<') ? page : undefined;
  });
  const failedId = /data-delivery-id="([^"]+)"[\s\S]*?data-testid="delivery-status">failed</.exec(failed.text)![1];
  const detail = await session.get(`/account/webhook/deliveries/${failedId}`);
  expect(detail.text).toContain('500');
  const retried = await session.post(`/account/webhook/deliveries/${failedId}/retry`);
  expect(retried.status).toBe(303);
  await eventually(
    async () =>
      (await api.get('/webhook/deliveries')).body.deliveries.find((d: any) => d.id === failedId)?.status ===
      'succeeded',
  );
  expect(receiver.accepted()).toHaveLength(2);

  const cleared = await session.post('/account/webhook', { url: '' });
  expect(cleared.location).toBe('/account/webhook?notice=cleared');
  expect((await api.get('/webhook')).body).toEqual({ url: '' });
  expect((await session.post('/account/webhook/test')).status).toBe(409);
  await expectLedgerMatchesBalance(h, accountId);
});

test('a session whose user no longer exists is ended and sent to sign in', async () => {
  const { session, accountId } = await withKey(h);
  await h.services.orm.em.fork().execute('delete from users where account_id = ?', [accountId]);
  const res = await session.get('/account');
  expect(res.status).toBe(303);
  expect(res.location).toBe('/account/sign-in');
  expect((await call(`${h.baseUrl}/account/sign-in`)).status).toBe(200);
});
