import type { Browser, Page } from 'playwright-core';
import { DEFAULT_EVENTS } from '../../src/domain/event-types';
import { launchChromium } from '../helpers/browser';
import { startHarness, type Harness } from '../helpers/harness';
import { call, eventually } from '../helpers/http';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// The account area's part of scoped keys and event subscriptions (issue 40), in Chromium: a key
// made with one scope, a network and an expiry is listed with them, its Copy button copies it
// (the page's script runs under its Content-Security-Policy), and it can read but not order; on
// the webhook page, the events it receives are chosen (balance.low with its threshold) and
// "resend since" sends a delivery that gave up again. Both pages are checked at
// desktop width and at 390 px for horizontal scrolling, with screenshots in /tmp.
let h: Harness;
let browser: Browser;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({ WEBHOOK_ALLOW_INSECURE_URLS: 'true', WEBHOOK_MAX_ATTEMPTS: '1' });
  browser = await launchChromium();
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await h?.stop();
});

/** No horizontal scrolling at desktop width or on a phone; a screenshot of each. */
async function fitsBothWidths(page: Page, name: string) {
  for (const [label, width] of [
    ['desktop', 1280],
    ['phone', 390],
  ] as const) {
    await page.setViewportSize({ width, height: 900 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    await page.screenshot({ path: `/tmp/wholesale-account-${name}-${label}.png`, fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

test('a scoped key is listed with its scopes, network and expiry and copied with its button; resend since sends a failed delivery again', async () => {
  const context = await browser.newContext({
    permissions: ['clipboard-read', 'clipboard-write'],
    viewport: { width: 1280, height: 900 },
  });
  const page = await context.newPage();
  const area = (path = '') => `${h.baseUrl}/account${path}`;
  await page.goto(area('/sign-up'));
  await page.fill('#email', `scopes-${Date.now()}@example.com`);
  await page.fill('#password', 'a long enough password');
  await page.getByTestId('sign-up').click();

  // A read-only key, usable from loopback only, expiring next year.
  await page.getByRole('link', { name: 'API keys' }).click();
  const expires = `${new Date().getUTCFullYear() + 1}-06-30`;
  await page.fill('#name', 'dashboard');
  for (const scope of ['orders', 'topups', 'redemptions', 'webhooks'])
    await page.getByTestId(`scope-${scope}`).uncheck();
  await page.fill('#cidrs', '127.0.0.0/8');
  await page.fill('#expires', expires);
  await page.getByTestId('create-key').click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  expect(key).toMatch(/^wsk_/);
  await page.getByTestId('copy-key').click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
  await expect(page.getByTestId('copy-key').textContent()).resolves.toBe('Copied');
  const row = page.getByTestId('key-row').first();
  await expect(row.getByTestId('key-scopes').textContent()).resolves.toBe('read');
  await expect(row.getByTestId('key-cidrs').textContent()).resolves.toBe('127.0.0.0/8');
  await expect(row.getByTestId('key-valid-until').textContent()).resolves.toBe(`${expires} 00:00 UTC`);
  await fitsBothWidths(page, 'scoped-key');

  expect((await call(`${h.apiUrl}/balance`, { key })).status).toBe(200);
  const order = await call(`${h.apiUrl}/orders`, {
    key,
    body: { externalOrderId: 'area-scoped-1', productId: 'prod_chatgpt_plus_1m', qty: 1 },
  });
  expect([order.status, order.body.error]).toEqual([403, 'insufficient_scope']);

  // A webhook whose receiver fails: the test event's delivery gives up after its one attempt.
  receiver.otherwise = 500;
  await page.getByRole('link', { name: 'Webhook' }).click();
  await page.fill('#url', receiver.url);
  await page.getByTestId('event-balance.low').check();
  await page.fill('#balanceLowThreshold', '5');
  await page.getByTestId('save-webhook').click();
  const secret = (await page.getByTestId('webhook-secret').textContent())!.trim();
  const [endpoint] = await h.services.orm.em
    .fork()
    .execute('select events, balance_low_threshold from webhook_endpoints where url = ?', [receiver.url]);
  expect(endpoint).toEqual({ events: [...DEFAULT_EVENTS, 'balance.low'], balance_low_threshold: '5.00' });
  await expect(page.getByTestId('event-balance.low').isChecked()).resolves.toBe(true);
  await page.getByTestId('copy-secret').click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
  await page.getByTestId('send-test').click();
  await eventually(async () => {
    await page.goto(area('/webhook'));
    return (await page.getByTestId('delivery-status').first().textContent()) === 'failed';
  });

  // Resend everything that failed since an hour ago: the receiver now accepts it.
  receiver.otherwise = 200;
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
  await page.fill('#since', hourAgo);
  await page.getByTestId('resend').click();
  await expect(page.getByTestId('notice').textContent()).resolves.toBe('1 delivery is being sent again.');
  await eventually(async () => {
    await page.goto(area('/webhook'));
    return (await page.getByTestId('delivery-status').first().textContent()) === 'succeeded';
  });
  expect(receiver.received.filter((r) => r.body?.event === 'webhook.test').map((r) => r.reply)).toEqual([500, 200]);
  await fitsBothWidths(page, 'webhook-resend');
  await context.close();
});
