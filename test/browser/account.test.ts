import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV } from '../helpers/payments';
import { startReceiver, verifySignature, type Receiver } from '../helpers/webhook-receiver';

// Issue 18 "Done when": a new reseller walks the account area in Debian's Chromium: sign up,
// create a key and use it on GET /balance and MCP get_balance, top up through the hosted checkout
// and see the balance and the ledger row, see an order placed through the API and reveal its
// codes, set a webhook to a local receiver and see a test event's delivery, revoke the key and
// get 401 with it. Every page is checked at desktop width and at 390 px (a phone) for the
// elements that matter, and screenshots are written to /tmp.
let h: Harness;
let browser: Browser;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({ ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '120', WEBHOOK_ALLOW_INSECURE_URLS: 'true' });
  browser = await launchChromium();
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await h?.stop();
});

const WIDTHS = [
  ['desktop', 1280, 900],
  ['phone', 390, 844],
] as const;

/**
 * The page at both widths: no horizontal scrolling, and each element that matters is visible and
 * lies within the viewport's width. Screenshots go to /tmp/wholesale-account-<name>-<width>.png.
 */
async function checkLayout(page: Page, name: string, testIds: string[]) {
  for (const [label, width, height] of WIDTHS) {
    await page.setViewportSize({ width, height });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    for (const id of testIds) {
      const el = page.getByTestId(id).first();
      await el.scrollIntoViewIfNeeded();
      expect(await el.isVisible()).toBe(true);
      const box = (await el.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(width + 0.5);
    }
    await page.screenshot({ path: `/tmp/wholesale-account-${name}-${label}.png`, fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function mcpBalance(key: string): Promise<unknown> {
  const mcp = new Client({ name: 'browser-walk', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  try {
    return (await mcp.callTool({ name: 'get_balance', arguments: {} })).structuredContent;
  } finally {
    await mcp.close();
  }
}

test('a new reseller: sign up, key, REST and MCP, top-up at the checkout, an order, a webhook, revoke', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const area = (path = '') => `${h.baseUrl}/account${path}`;

  // Sign up: the area sends a stranger to sign in, from where an account is one form away.
  await page.goto(area());
  expect(new URL(page.url()).pathname).toBe('/account/sign-in');
  await checkLayout(page, 'sign-in', ['sign-in', 'to-sign-up']);
  await page.getByTestId('to-sign-up').click();
  const email = `walk-${Date.now()}@example.com`;
  await page.fill('#email', email);
  await page.fill('#password', 'a long enough password');
  await page.getByTestId('sign-up').click();
  await expect(page.getByTestId('balance').textContent()).resolves.toBe('0.00');
  await expect(page.getByTestId('level').textContent()).resolves.toBe('Lv1');
  await expect(page.getByTestId('notice').textContent()).resolves.toContain('Your account is ready');
  const [{ account_id: accountId }] = await h.services.orm.em
    .fork()
    .execute('select account_id from users where email = ?', [email]);

  // A key, shown once.
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.fill('#name', 'walkthrough');
  await page.getByTestId('create-key').click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  expect(key).toMatch(/^wsk_/);
  await checkLayout(page, 'key-created', ['new-key', 'create-key', 'key-shown']);
  await page.goto(area('/keys'));
  expect(await page.content()).not.toContain(key);
  await expect(page.getByTestId('key-shown').textContent()).resolves.toBe(`${key.slice(0, 12)}…${key.slice(-4)}`);
  await checkLayout(page, 'keys', ['key-shown', 'rotate', 'revoke']);

  // The key on REST and MCP.
  const api = client(h.apiUrl, key);
  expect((await api.get('/balance')).body).toEqual({ balance: '0.00', currency: 'USDT' });
  expect(await mcpBalance(key)).toEqual({ balance: '0.00', currency: 'USDT' });

  // Top up 30.00 USDT: the form leads to the hosted checkout; the payer pays there.
  await page.goto(area());
  await checkLayout(page, 'overview', ['balance', 'level', 'next-level', 'topup', 'compliance']);
  await page.fill('#amount', '30.00');
  await page.selectOption('#currency', 'USDT');
  await page.getByTestId('topup').click();
  await expect(page.getByTestId('order-status').textContent()).resolves.toBe('pending');
  await checkLayout(page, 'topup-pending', ['order-status', 'order-amount', 'compliance', 'pay-link']);
  await page.getByTestId('pay-link').click();
  await expect(page.getByTestId('amount').textContent()).resolves.toBe('30.00');
  await page.getByTestId('pay').click();
  await expect(page.getByTestId('result').textContent()).resolves.toContain('Payment received');
  await eventually(async () => {
    await page.goto(area());
    return (await page.getByTestId('balance').textContent()) === '30.00';
  });
  await expect(page.getByTestId('ledger-amount').first().textContent()).resolves.toBe('30.00');
  await expect(page.getByTestId('ledger-balance-after').first().textContent()).resolves.toBe('30.00');
  await checkLayout(page, 'overview-funded', ['balance', 'ledger-amount', 'ledger-balance-after']);
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('30.00');

  // An order placed through the API shows in the area; its codes only on reveal.
  const order = await api.post('/orders', { externalOrderId: 'walk-1', productId: 'prod_chatgpt_plus_1m', qty: 1 });
  expect(order.body.codes).toHaveLength(1);
  await page.getByRole('link', { name: 'Orders' }).click();
  const row = page.locator(`[data-order-id="${order.body.orderId}"]`);
  expect(await row.isVisible()).toBe(true);
  await checkLayout(page, 'orders', ['order-row']);
  expect(await page.content()).not.toContain(order.body.codes[0]);
  await row.getByRole('link').first().click();
  expect(await page.content()).not.toContain(order.body.codes[0]);
  await page.getByTestId('reveal-codes').click();
  await expect(page.getByTestId('code').allTextContents()).resolves.toEqual(order.body.codes);
  await checkLayout(page, 'order-codes', ['order-status', 'code']);
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('12.00');

  // The webhook: a local receiver, the secret once, a test event, its delivery in the log.
  await page.getByRole('link', { name: 'Webhook' }).click();
  await page.fill('#url', receiver.url);
  await page.getByTestId('save-webhook').click();
  const secret = (await page.getByTestId('webhook-secret').textContent())!.trim();
  await checkLayout(page, 'webhook-saved', ['webhook-secret', 'send-test']);
  await page.getByTestId('send-test').click();
  const [got] = await receiver.waitFor(1);
  expect(got.body.event).toBe('webhook.test');
  expect(verifySignature(secret, got.raw, got.headers['x-wholesale-signature'])).toBe(true);
  await eventually(async () => {
    await page.goto(area('/webhook'));
    return (await page.getByTestId('delivery-status').first().textContent()) === 'succeeded';
  });
  expect(await page.content()).not.toContain(secret);
  await checkLayout(page, 'webhook', ['webhook-url', 'delivery-status', 'delivery-attempts']);

  // Revoke: the next request with the key is 401, on REST and MCP.
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByTestId('revoke').click();
  await expect(page.getByTestId('notice').textContent()).resolves.toContain('The key is revoked');
  await expect(page.getByTestId('no-keys').isVisible()).resolves.toBe(true);
  const refused = await call(`${h.apiUrl}/balance`, { key });
  expect(refused.status).toBe(401);
  expect(refused.body).toMatchObject({ error: 'unauthorized' });
  await expect(mcpBalance(key)).rejects.toMatchObject({ code: 401 });

  // Sign out: the area is closed again.
  await page.getByTestId('sign-out').click();
  expect(new URL(page.url()).pathname).toBe('/account/sign-in');
  await page.goto(area('/keys'));
  expect(new URL(page.url()).pathname).toBe('/account/sign-in');
  await page.close();
});
