import type { ChildProcess } from 'node:child_process';
import type { Browser } from 'playwright-core';
import { adjustBalance } from '../../src/services/payments/admin';
import { getBatch } from '../../src/services/orders/batch-queries';
import { launchChromium } from '../helpers/browser';
import { freePort, startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { killed } from '../helpers/processes';

// Issue 40, done-when: the account area shows a batch's progress, in Chromium. A reseller uploads
// a CSV file of 300 lines (some beyond the balance, some repeated) on the Batches page; the batch's
// page shows it waiting while no worker runs, then, reloading itself, its progress as the worker
// (the production process, started then) places the lines, until it is completed with the counts
// the API gives; its lines link to their orders. Screenshots at desktop width and 390 px go to /tmp.
const LINES = 300;
let h: Harness;
let browser: Browser;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  h = await startHarness({ BATCH_CHUNK_LINES: '10' }, { worker: false });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await killed(worker);
  await browser?.close();
  await h?.stop();
});

/** 18.00 orders of one to three units, test-product orders, and every 25th line a repeat of the one before. */
function csvFile(): string {
  const lines = ['externalOrderId,productId,qty,expectedUnitPrice'];
  for (let i = 1; i <= LINES; i++) {
    if (i % 25 === 0) lines.push(lines[lines.length - 1]);
    else if (i % 3 === 0) lines.push(`web-${i},prod_chatgpt_plus_1m,${1 + (i % 3)},18.00`);
    else lines.push(`web-${i},prod_api_order_test,1,`);
  }
  return `${lines.join('\r\n')}\r\n`;
}

test('a CSV file uploaded on the Batches page: the batch page shows it waiting, then its progress, then completed with its counts', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${h.baseUrl}/account/sign-up`);
  const email = `batch-${Date.now()}@example.com`;
  await page.fill('#email', email);
  await page.fill('#password', 'a long enough password');
  await page.getByTestId('sign-up').click();
  await page.waitForURL(/\/account(\?|$)/);
  const [{ account_id: accountId }] = await h.services.orm.em
    .fork()
    .execute<{ account_id: string }[]>('select account_id from users where email = ?', [email]);
  await adjustBalance(h.services.orm.em.fork(), {
    accountId,
    amount: '400.00',
    note: 'test funding',
    levelThresholds: h.config.LEVEL_THRESHOLDS,
  });

  await page.goto(`${h.baseUrl}/account/batches`);
  expect(await page.getByTestId('no-batches').isVisible()).toBe(true);
  const file = csvFile();
  await page
    .getByTestId('batch-file')
    .setInputFiles({ name: 'orders.csv', mimeType: 'text/csv', buffer: Buffer.from(file) });
  // The page's script puts the file's text in the form.
  await page.waitForFunction(
    (n) => (document.getElementById('csv') as HTMLTextAreaElement).value.split('\n').length > n,
    LINES,
  );
  await page.getByTestId('batch-submit').click();
  await page.waitForURL(/\/account\/batches\/bat_/);
  const batchId = new URL(page.url()).pathname.split('/').pop()!;

  // No worker yet: accepted, nothing placed.
  expect(await page.getByTestId('batch-status').textContent()).toBe('running');
  expect(await page.getByTestId('batch-progress').textContent()).toBe(
    `0 placed, 0 refused, ${LINES} waiting, of ${LINES}`,
  );
  await page.screenshot({ path: '/tmp/wholesale-account-batch-waiting-desktop.png', fullPage: true });

  const metricsPort = await freePort();
  worker = startWorkerProcess(h, { BATCH_CHUNK_LINES: '10', METRICS_PORT: String(metricsPort) });
  // The page reloads itself while the batch runs: what it showed each time, until completed.
  const seen = new Set<string>();
  await eventually(
    async () => {
      const status = await page
        .getByTestId('batch-status')
        .textContent()
        .catch(() => null);
      const progress = await page
        .getByTestId('batch-progress')
        .textContent()
        .catch(() => null);
      if (progress) seen.add(progress);
      return status === 'completed';
    },
    150_000,
    100,
    'the page shows the batch completed',
  );

  const batch = await getBatch(h.services.orm.em.fork(), accountId, batchId);
  expect(batch).toMatchObject({ status: 'completed', pending: 0, total: LINES });
  expect(batch.rejected).toBeGreaterThan(0);
  const final = `${batch.placed} placed, ${batch.rejected} refused, 0 waiting, of ${LINES}`;
  expect(await page.getByTestId('batch-progress').textContent()).toBe(final);
  expect(await page.getByTestId('batch-bar').getAttribute('value')).toBe(String(LINES));
  expect([...seen][0]).toBe(`0 placed, 0 refused, ${LINES} waiting, of ${LINES}`);
  expect([...seen].at(-1)).toBe(final);
  process.stdout.write(`\nbatch page showed: ${[...seen].join(' | ')}\n`);

  // Its lines, each with its outcome; a placed one opens its order.
  expect(await page.getByTestId('batch-line').count()).toBe(50);
  expect(await page.getByTestId('more-lines').isVisible()).toBe(true);
  for (const [label, width, height] of [
    ['desktop', 1280, 900],
    ['phone', 390, 844],
  ] as const) {
    await page.setViewportSize({ width, height });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    await page.screenshot({ path: `/tmp/wholesale-account-batch-${label}.png`, fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.getByTestId('line-outcome').first().getByRole('link').click();
  await page.waitForURL(/\/account\/orders\/ord_/);
  expect(await page.getByTestId('order-status').textContent()).toBe('delivered');

  await page.goto(`${h.baseUrl}/account/batches`);
  expect(await page.getByTestId('batch-row').count()).toBe(1);
  await expectLedgerMatchesBalance(h, accountId);
}, 240_000);
