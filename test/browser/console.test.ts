import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { auditRows, freshCode, staffMember, stuckOrder, STUCK_ORDER_ENV, type Member } from '../helpers/console';
import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV } from '../helpers/payments';
import { reseller } from '../helpers/procurement';
import { startReceiver, verifySignature, type Receiver } from '../helpers/webhook-receiver';

// Issue 30 "Done when", in Chromium: a support agent signs in to /console with password and TOTP,
// finds a needs_attention order in the queue (with its workflow's state), delivers it with pasted
// codes and a reason; the reseller's order is delivered, order.delivered reaches the reseller's
// webhook, the ledger is right, and the audit log holds the agent's name, the reason and the
// request id. A viewer sees the same order with no button to act.
let h: Harness;
let browser: Browser;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    ...STUCK_ORDER_ENV,
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
  });
  browser = await launchChromium();
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await h?.stop();
});

async function signIn(m: Member) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${h.baseUrl}/console`);
  expect(new URL(page.url()).pathname).toBe('/console/sign-in');
  await page.fill('#email', m.email);
  await page.fill('#password', m.password);
  await page.fill('#code', await freshCode(m));
  await page.getByTestId('sign-in').click();
  await expect(page.getByTestId('signed-in-as').textContent()).resolves.toContain(m.name);
  return { context, page };
}

test('a viewer sees a needs_attention order without buttons; a support agent delivers it with pasted codes', async () => {
  const { api, accountId } = await reseller(h, '200.00');
  const { secret } = (await api.put('/webhook', { url: receiver.url })).body;
  const orderId = await stuckOrder(api, 'prod_roblox_gift_card_us_50', 3, 1, 'console-walk-1');

  // A viewer reads the stuck order but has nothing to press, and no audit log.
  const viewer = await staffMember(h, 'viewer', { name: 'Vic Viewer' });
  const seen = await signIn(viewer);
  await seen.page.goto(`${h.baseUrl}/console/orders/${orderId}`);
  await expect(seen.page.getByTestId('fulfillment-status').textContent()).resolves.toBe('needs_attention');
  expect(await seen.page.locator('form[action^="/console/orders/"] button').count()).toBe(0);
  await seen.page.goto(`${h.baseUrl}/console/audit`);
  await expect(seen.page.getByTestId('error').textContent()).resolves.toContain('Your role cannot do this');
  await seen.context.close();

  const agent = await staffMember(h, 'support', { name: 'Alice Agent' });
  const { context, page } = await signIn(agent);
  const row = page.locator(`[data-testid="queue-row"][data-order-id="${orderId}"]`);
  await expect(row.getByTestId('workflow-state').textContent()).resolves.toMatch(
    /^needs_attention · \d+ rounds · 2 missing/,
  );
  await row.getByTestId('open-order').click();
  await expect(page.getByTestId('fulfillment-status').textContent()).resolves.toBe('needs_attention');
  expect(await page.getByTestId('temporal-link').last().getAttribute('href')).toMatch(
    new RegExp(`/namespaces/default/workflows/procure%3A${orderId}$`),
  );

  await page.fill('#codes', 'HAND-0001\nHAND-0002\n');
  await page.fill('#deliver-reason', 'bought two cards at the retail desk');
  const [posted] = await Promise.all([
    page.waitForResponse(
      (r) => r.request().method() === 'POST' && r.url().endsWith(`/console/orders/${orderId}/deliver`),
    ),
    page.getByTestId('deliver').click(),
  ]);
  expect(posted.status()).toBe(303);
  const requestId = posted.headers()['x-request-id'];
  await expect(page.getByTestId('notice').textContent()).resolves.toContain('Delivered');
  await expect(page.getByTestId('order-status').textContent()).resolves.toBe('delivered');
  expect(await page.getByTestId('audit-request-id').allTextContents()).toContain(requestId);
  expect(await page.getByTestId('deliver').count()).toBe(0);

  // The reseller's side: delivered with every code, the webhook sent and signed, the money right.
  const order = (await api.get(`/orders/${orderId}`)).body;
  expect(order).toMatchObject({ status: 'delivered', fulfillmentStatus: 'delivered', fulfilledQuantity: 3 });
  expect(order.codes).toEqual(expect.arrayContaining(['HAND-0001', 'HAND-0002']));
  const [hook] = await receiver.waitFor(1, (all) =>
    all.filter((r) => r.body?.event === 'order.delivered' && r.body?.orderId === orderId),
  );
  expect(hook.body).toMatchObject({ orderId, externalOrderId: 'console-walk-1', codes: order.codes });
  expect(verifySignature(secret, hook.raw, hook.headers['x-wholesale-signature'])).toBe(true);
  const l = await expectLedgerMatchesBalance(h, accountId);
  expect(l.rows.map((r) => [r.type, r.amount, r.balance_after])).toEqual([
    ['adjust', '200.00', '200.00'],
    ['purchase', '-147.00', '53.00'],
  ]);
  expect(await auditRows(h, `action = 'order.deliver' and subject_id = ?`, [orderId])).toEqual([
    expect.objectContaining({
      actor: 'Alice Agent',
      actor_email: agent.email,
      role: 'support',
      account_id: accountId,
      reason: 'bought two cards at the retail desk',
      request_id: requestId,
      details: { codes: 2 },
      outcome: 'ok',
    }),
  ]);
  await eventually(async () => {
    await page.reload();
    return (await page.getByTestId('order-delivery-status').allTextContents()).includes('succeeded');
  });
  await page.screenshot({ path: '/tmp/wholesale-console-order.png', fullPage: true });
  await context.close();
});
