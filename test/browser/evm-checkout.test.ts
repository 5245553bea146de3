import jsQR from 'jsqr';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { getAddress } from 'viem';
import { launchChromium } from '../helpers/browser';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { depositAddressOf, evmEnv, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { waitForOrderStatus } from '../helpers/payments';

// Issue 25: the self-hosted USDT/USDC checkout's page, in a real browser (Debian's Chromium) on a
// real EVM node (Hardhat): the payer reads where to send what (the QR code a wallet scans asks
// exactly that), pays in two transfers, and watches the page follow the chain by itself.
let chain: DevChain;
let h: Harness;
let browser: Browser;

beforeAll(async () => {
  chain = await startDevChain();
  h = await startHarness({ ...evmEnv(chain, { confirmations: 2 }), PAYMENT_WINDOW_SECONDS: '300' });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.stop();
  await chain?.stop();
});

/** What a wallet's camera reads from the page's QR code. */
async function scanQr(page: Page): Promise<string | undefined> {
  const png = PNG.sync.read(await page.getByTestId('qr').screenshot());
  return jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height)
    ?.data;
}

const statusOf = (page: Page, status: string) => page.locator(`[data-testid=status][data-status=${status}]`);

test('pay an intent order in two transfers on the checkout page; the page follows to paid by itself and the order is delivered', async () => {
  const { api, accountId } = await reseller(h);
  const order = await api.post('/orders', {
    externalOrderId: 'browser-evm',
    productId: 'prod_chatgpt_team_1m',
    qty: 2,
    payment: 'intent',
  });
  expect(order.body).toMatchObject({ status: 'pending', amount: '50.00' });
  const deposit = getAddress(await depositAddressOf(h, order.body.checkoutUrl));
  const usdt = getAddress(chain.tokens.USDT.address);
  const uriFor = (units: bigint) => `ethereum:${usdt}@31337/transfer?address=${deposit}&uint256=${units}`;

  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  // A script error or a Content-Security-Policy refusal shows here (the site has no favicon: not one).
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.location().url.endsWith('/favicon.ico')) pageErrors.push(msg.text());
  });
  await page.goto(order.body.checkoutUrl);

  expect(await page.locator('h1').textContent()).toBe('Pay 50.00 USDT');
  expect(await page.getByTestId('address').inputValue()).toBe(deposit);
  expect(await page.getByTestId('amount').inputValue()).toBe('50.00');
  expect(await page.getByTestId('chain').textContent()).toBe('Hardhat (chain id 31337)');
  expect(await page.getByTestId('token-address').textContent()).toBe(usdt);
  expect(await page.getByTestId('compliance').textContent()).toContain('sanctioned platforms');
  expect(await page.getByTestId('status').textContent()).toContain('Waiting for payment');
  expect(await page.locator('nav.options [aria-current=true]').textContent()).toBe('USDT on Hardhat');
  const timeLeft = await page.getByTestId('time-left').textContent();
  expect(timeLeft).toMatch(/^[45] min \d{1,2} s$/);

  // The QR code a wallet scans asks for exactly this order's amount of USDT to this deposit address.
  expect(await scanQr(page)).toBe(uriFor(units6('50.00')));
  expect(await page.getByTestId('qr').getAttribute('data-uri')).toBe(uriFor(units6('50.00')));
  expect(await page.getByTestId('uri').textContent()).toBe(uriFor(units6('50.00')));
  expect((await page.getByTestId('qr').boundingBox())?.width).toBeGreaterThanOrEqual(180);
  await page.screenshot({ path: '/tmp/evm-checkout.png', fullPage: true });

  // The page's script runs under its Content-Security-Policy: the countdown moves, Copy copies.
  await page.waitForFunction(
    (shown) => document.querySelector('[data-testid=time-left]')?.textContent !== shown,
    timeLeft,
  );
  await page.getByTestId('copy-address').click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(deposit);

  // Mined in its own block, the transfer is seen at a depth of one; a block more confirms it.
  await chain.pay(deposit, 'USDT', units6('20.00'));
  await statusOf(page, 'confirming').waitFor({ timeout: 30_000 });
  expect(await page.getByTestId('status').textContent()).toContain('Payment seen, 1 of 2 confirmations.');
  expect(await page.getByTestId('transfers').textContent()).toBe('20.00 USDT on Hardhat: 1 of 2 confirmations');
  await chain.mine(1);
  await statusOf(page, 'partly_paid').waitFor({ timeout: 30_000 });
  expect(await page.getByTestId('status').textContent()).toContain('Partly paid');
  expect(await page.getByTestId('missing').textContent()).toBe('30.00');
  expect(await page.getByTestId('transfers').textContent()).toContain('20.00 USDT on Hardhat: confirmed');
  // What is asked now is the rest.
  expect(await page.getByTestId('amount').inputValue()).toBe('30.00');
  expect(await scanQr(page)).toBe(uriFor(units6('30.00')));
  await page.screenshot({ path: '/tmp/evm-checkout-partly-paid.png', fullPage: true });

  await chain.pay(deposit, 'USDT', units6('30.00'));
  await chain.mine(1);
  await statusOf(page, 'paid').waitFor({ timeout: 30_000 });
  expect(await page.getByTestId('status').textContent()).toContain('Paid.');
  expect(await page.getByTestId('qr').count()).toBe(0);
  await page.screenshot({ path: '/tmp/evm-checkout-paid.png', fullPage: true });
  expect(pageErrors).toEqual([]);
  await context.close();
  // Paid is final: the page no longer refreshes itself, with script or without.
  expect(await (await fetch(order.body.checkoutUrl)).text()).not.toMatch(/http-equiv="refresh"|checkout\.js/);

  const delivered = await waitForOrderStatus(api, order.body.orderId, 'delivered');
  expect(delivered.codes).toHaveLength(2);
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.00');
});

test('an unknown checkout is a 404 page and a 404 JSON; a chain or token the query names that is not offered falls back to the default', async () => {
  const missingPage = await fetch(`${h.baseUrl}/checkout/nope`);
  expect(missingPage.status).toBe(404);
  expect(missingPage.headers.get('content-type')).toMatch(/^text\/html/);
  expect(await missingPage.text()).toContain('Checkout not found');
  const missingJson = await fetch(`${h.baseUrl}/checkout/nope/status.json`);
  expect(missingJson.status).toBe(404);
  expect(await missingJson.json()).toEqual({ error: 'not_found', message: 'Unknown checkout' });

  const { api } = await reseller(h);
  const order = await api.post('/orders', {
    externalOrderId: 'browser-evm-query',
    productId: 'prod_chatgpt_team_1m',
    qty: 1,
    payment: 'intent',
  });
  expect(order.body).toMatchObject({ status: 'pending', amount: '25.00' });
  const status = await fetch(`${order.body.checkoutUrl}/status.json`);
  expect(status.headers.get('cache-control')).toBe('no-store');
  expect(await status.json()).toMatchObject({ status: 'waiting', amount: '25.00', currency: 'USDT', missing: '25.00' });

  // Without script the page still follows the payment, by reloading itself.
  expect(await (await fetch(order.body.checkoutUrl)).text()).toContain(
    '<noscript><meta http-equiv="refresh" content="15"></noscript>',
  );

  const cases = [
    { query: '?chain=999&token=XYZ', token: chain.tokens.USDT.address },
    { query: '?chain=31337&token=XYZ', token: chain.tokens.USDT.address },
    { query: `?chain=${chain.chainId}&token=USDC`, token: chain.tokens.USDC.address },
  ];
  for (const { query, token } of cases) {
    const res = await fetch(`${order.body.checkoutUrl}${query}`);
    expect({ query, status: res.status }).toEqual({ query, status: 200 });
    expect(await res.text()).toContain(`data-uri="ethereum:${getAddress(token)}@31337/transfer?`);
  }
});
