import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startHarness, type Harness } from '../helpers/harness';

// Issue 13 item 4: the API reference at /wholesale/v1/docs, public like openapi.json, renders
// the published document in Debian's Chromium with Redoc served from node_modules (no CDN: the
// machine's network is closed, and the page's CSP allows nothing but the service itself).
let h: Harness;
let browser: Browser;

beforeAll(async () => {
  h = await startHarness({}, { worker: false });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

test('the docs page lists every operation and the webhooks, without a key and without leaving the service', async () => {
  const doc = await (await fetch(`${h.apiUrl}/openapi.json`)).json();
  const operations = Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item));
  const summaries = operations.map((op) => op.summary as string);
  // The spec's 17 operations, and the extensions of issue 40 (exports, batches, resending deliveries).
  const extensions = [
    'createBatch',
    'getBatch',
    'listBatchLines',
    'createExport',
    'getExport',
    'downloadExport',
    'exportOrdersCsv',
    'exportLedgerCsv',
    'resendWebhookDeliveries',
  ];
  expect(operations.filter((op) => !extensions.includes(op.operationId))).toHaveLength(17);
  expect(
    operations
      .filter((op) => extensions.includes(op.operationId))
      .map((op) => op.operationId)
      .sort(),
  ).toEqual([...extensions].sort());

  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // Redoc's attribution tries a logo on its CDN; the page's CSP must stop it in the browser.
  const foreign: string[] = [];
  const loadedFromOutside: string[] = [];
  const isForeign = (url: string) => !url.startsWith(h.baseUrl) && !url.startsWith('data:') && !url.startsWith('blob:');
  page.on('requestfailed', (r) => {
    if (isForeign(r.url())) foreign.push(`${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (isForeign(r.url())) loadedFromOutside.push(r.url());
  });
  const res = await page.goto(`${h.apiUrl}/docs`);
  expect(res?.status()).toBe(200);
  expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");

  // Redoc's side menu names each operation by its summary.
  const menu = page.locator('.menu-content');
  await menu.waitFor({ timeout: 60_000 });
  for (const summary of summaries)
    await menu.getByText(summary, { exact: true }).first().waitFor({ state: 'attached', timeout: 30_000 });
  for (const event of [
    'order.delivered',
    'order.delivery_attention',
    'topup.credited',
    'redemption.fulfilled',
    'redemption.failed',
    'webhook.test',
  ]) {
    expect(await page.getByText(event).count()).toBeGreaterThan(0);
  }
  const heading = page.getByRole('heading', { name: 'Place an order (idempotent on externalOrderId)' });
  await heading.scrollIntoViewIfNeeded();
  const shot = join(tmpdir(), 'wholesale-api-docs.png');
  await page.screenshot({ path: shot, fullPage: false });
  // A rendered reference, not a blank page: a PNG of some weight with the operation on screen.
  expect(readFileSync(shot).length).toBeGreaterThan(30_000);
  expect(await heading.isVisible()).toBe(true);
  expect(loadedFromOutside).toEqual([]);
  for (const f of foreign) expect(f).toMatch(/csp/i);
  await page.close();
}, 120_000);
