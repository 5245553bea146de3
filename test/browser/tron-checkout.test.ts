import jsQR from 'jsqr';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { getAddress } from 'viem';
import { tronAddress } from '../../src/providers/evm/tron';
import { startTronJsonRpc, TRON_MAINNET_CHAIN_ID, type TronJsonRpc } from '../fakes/tron-jsonrpc';
import { launchChromium } from '../helpers/browser';
import { evmChainSetting, startDevChain, type DevChain } from '../helpers/evm-chain';
import { depositAddressOf, tronDepositOf, tronEnv, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { waitForOrderStatus } from '../helpers/payments';

// Issue 38: the checkout page on a TRON chain (the java-tron fake in front of Hardhat) beside an
// EVM one, in a real browser: TRON's option shows the checkout's own T… address, its QR code holds
// that address (what TRON wallets' scanners read), Copy copies it, and paying it pays the order.
let chain: DevChain;
let tron: TronJsonRpc;
let h: Harness;
let browser: Browser;

beforeAll(async () => {
  chain = await startDevChain();
  tron = await startTronJsonRpc(chain.rpcUrl);
  const env = tronEnv(chain, tron.url);
  const chains = [evmChainSetting(chain, { confirmations: 1 }), ...JSON.parse(env.EVM_CHAINS)];
  h = await startHarness({ ...env, EVM_CHAINS: JSON.stringify(chains), PAYMENT_WINDOW_SECONDS: '300' });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.stop();
  await tron?.stop();
  await chain?.stop();
});

async function scanQr(page: Page): Promise<string | undefined> {
  const png = PNG.sync.read(await page.getByTestId('qr').screenshot());
  return jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height)
    ?.data;
}

test('the TRON option shows the T… address, its QR code decodes to it, Copy copies it, and a payment to it delivers the order', async () => {
  const { api } = await reseller(h);
  const order = (
    await api.post('/orders', {
      externalOrderId: 'browser-tron',
      productId: 'prod_chatgpt_team_1m',
      qty: 2,
      payment: 'intent',
    })
  ).body;
  const deposit = tronAddress(await tronDepositOf(h, order.checkoutUrl));
  expect(deposit).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);

  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(order.checkoutUrl);
  // Both chains are offered; the EVM one (listed first) shows its own 0x address.
  expect(await page.locator('nav.options a').allTextContents()).toEqual([
    'USDT on Hardhat',
    'USDC on Hardhat',
    'USDT on TRON',
  ]);
  expect(await page.getByTestId('address').inputValue()).toBe(getAddress(await depositAddressOf(h, order.checkoutUrl)));

  await page.getByRole('link', { name: 'USDT on TRON' }).click();
  await page.waitForURL(/chain=728126428/);
  expect(await page.getByTestId('address').inputValue()).toBe(deposit);
  expect(await page.getByTestId('chain').textContent()).toBe(`TRON (chain id ${TRON_MAINNET_CHAIN_ID})`);
  expect(await page.getByTestId('token-address').textContent()).toBe(tronAddress(chain.tokens.USDT.address));
  expect(await page.getByTestId('amount').inputValue()).toBe('50.00');
  expect(await scanQr(page)).toBe(deposit);
  expect(await page.getByTestId('qr').getAttribute('data-uri')).toBe(deposit);
  await page.screenshot({ path: '/tmp/tron-checkout.png', fullPage: true });
  await page.getByTestId('copy-address').click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(deposit);

  await chain.pay(await tronDepositOf(h, order.checkoutUrl), 'USDT', units6('50.00'));
  await chain.mine(20);
  await page.locator('[data-testid=status][data-status=paid]').waitFor({ timeout: 30_000 });
  expect(pageErrors).toEqual([]);
  await context.close();
  expect((await waitForOrderStatus(api, order.orderId, 'delivered')).codes).toHaveLength(2);
});
