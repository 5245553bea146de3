import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV } from '../helpers/payments';

// Issue 4 "Done when": a payer opens the hosted checkout in a real browser (Debian's Chromium, no
// browser download), sees the amount, currency and compliance notice, clicks pay, and the
// reseller sees the order delivered through the API.
let h: Harness;
let browser: Browser;

beforeAll(async () => {
  h = await startHarness({ ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '120' });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

test('pay an intent order on the checkout page and see it delivered through the API', async () => {
  const { apiKey, accountId } = await h.account('0');
  const api = client(h.apiUrl, apiKey);
  const order = await api.post('/orders', {
    externalOrderId: 'browser-pay',
    productId: 'prod_chatgpt_team_1m',
    qty: 2,
    payment: 'intent',
  });
  expect(order.body).toMatchObject({ status: 'pending', amount: '50.00' });

  const page = await browser.newPage();
  await page.goto(order.body.checkoutUrl);
  await expect(page.getByTestId('amount').textContent()).resolves.toBe('50.00');
  await expect(page.getByTestId('currency').textContent()).resolves.toBe('USDT');
  await expect(page.getByTestId('compliance').textContent()).resolves.toContain('sanctioned platforms');
  await page.screenshot({ path: '/tmp/wholesale-checkout.png' });
  await page.getByTestId('pay').click();
  await expect(page.getByTestId('result').textContent()).resolves.toContain('Payment received');

  const delivered = await eventually(async () => {
    const res = await api.get(`/orders/${order.body.orderId}`);
    return res.body.status === 'delivered' ? res.body : undefined;
  });
  expect(delivered.codes).toHaveLength(2);
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.00');
});

test('a top-up paid in USDC on the page is credited to the balance', async () => {
  const { apiKey, accountId } = await h.account('0');
  const api = client(h.apiUrl, apiKey);
  const topup = await api.post('/topup', { externalTopupId: 'browser-top', amount: '15.25', currency: 'USDC' });
  const page = await browser.newPage();
  await page.goto(topup.body.checkoutUrl);
  await expect(page.getByTestId('amount').textContent()).resolves.toBe('15.25');
  await expect(page.getByTestId('currency').textContent()).resolves.toBe('USDC');
  await page.getByTestId('pay').click();
  await eventually(async () => (await api.get('/balance')).body.balance === '15.25');
  await expectLedgerMatchesBalance(h, accountId);
});
