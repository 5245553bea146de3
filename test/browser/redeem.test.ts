import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { sandboxUpstreamOf, startHarness, type Harness } from '../helpers/harness';
import { eventsOf, redemptionRowsOfCode, reseller } from '../helpers/redemption';

// Issue 7 "Done when": an end customer redeems a code on the public site in a real browser
// (Debian's Chromium, no browser download), first with a field left empty, then correctly, and
// watches the status page reach fulfilled by itself.
const TEAM = 'prod_chatgpt_team_1m';
let h: Harness;
const sandbox = sandboxUpstreamOf(() => h);
let browser: Browser;

beforeAll(async () => {
  h = await startHarness({ REDEMPTION_REFRESH_SECONDS: '1' });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

test('redeem on the site: an empty required field is refused and leaves the code unused; then it is submitted and the status page reaches fulfilled', async () => {
  const { api, accountId } = await reseller(h);
  const order = await api.post('/orders', { externalOrderId: 'browser-1', productId: TEAM, qty: 1 });
  const code: string = order.body.codes[0];
  expect(order.body.redeemUrl).toBe(`${h.baseUrl}/redeem`);
  // The supplier takes two refreshes, so the page is seen in progress before it completes.
  sandbox.script(TEAM, { polls: 2 });

  const page = await browser.newPage();
  await page.goto(order.body.redeemUrl);
  await page.getByLabel('Code').fill(code.toLowerCase().replace(/-/g, ''));
  await page.getByRole('button', { name: 'Continue' }).click();

  await page.getByLabel('Organization id').fill('3f2504e0-4f89-41d3-9a0c-0305e82c3301');
  await page.getByRole('button', { name: 'Redeem' }).click();
  await page.getByRole('alert').waitFor();
  expect(await page.getByRole('alert').textContent()).toBe('Please fill in “Email”.');
  expect(await page.getByLabel('Organization id').inputValue()).toBe('3f2504e0-4f89-41d3-9a0c-0305e82c3301');
  await page.screenshot({ path: '/tmp/redeem-missing-field.png', fullPage: true });
  expect((await api.get(`/redemptions?code=${code}`)).body).toMatchObject({
    status: 'not_redeemed',
    redemptionId: null,
  });
  expect(await redemptionRowsOfCode(h, code)).toEqual([]);

  await page.getByLabel('Email').fill('jane@example.com');
  await page.getByRole('button', { name: 'Redeem' }).click();
  await page.waitForURL(/\/redeem\/status\/rdm_/);
  const first = await page.locator('#status').textContent();
  expect(['Submitted', 'Processing']).toContain(first);

  // No reload from the test: the page follows the progress itself.
  await page.locator('#status', { hasText: 'Fulfilled' }).waitFor({ timeout: 30_000 });
  expect(await page.locator('#deliverable').textContent()).toContain('j***@example.com');
  await page.screenshot({ path: '/tmp/redeem-fulfilled.png', fullPage: true });

  const id = page.url().split('/').pop()!;
  expect((await api.get(`/redemptions/${id}`)).body).toMatchObject({
    status: 'fulfilled',
    code,
    orderId: order.body.orderId,
  });
  expect((await eventsOf(h, accountId)).map((e) => e.id)).toEqual([`redemption:${id}:1:redemption.fulfilled`]);
  await page.close();
});
