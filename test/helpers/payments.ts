import { sign } from '../../src/providers/sandbox/sandbox-payments';
import type { Harness } from './harness';
import { call, client, eventually } from './http';

/** The checkout id inside a checkout URL (…/checkout/<id>). */
export const checkoutIdOf = (url: string) => url.split('/checkout/')[1];

/** Pays through the hosted page's own form, as a payer's browser would post it. */
export async function payThroughPage(checkoutUrl: string): Promise<string> {
  const page = await fetch(checkoutUrl).then((r) => r.text());
  const action = /<form method="post" action="([^"]+\/pay)"/.exec(page)?.[1];
  if (!action) throw new Error('no pay form on the checkout page');
  const res = await fetch(new URL(action, checkoutUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
  });
  return res.text();
}

/** Sends the provider's signed callback for a checkout, as the provider would (again). */
export async function sendCallback(
  h: Harness,
  checkoutId: string,
  reference: string,
  status: 'paid' | 'abandoned' = 'paid',
) {
  const body = JSON.stringify({ checkoutId, reference, status });
  return call(`${h.baseUrl}/payments/callback`, {
    rawBody: body,
    headers: { 'x-sandbox-signature': sign(h.config.PAYMENT_CALLBACK_SECRET, body) },
  });
}

export const PAYMENT_ENV = {
  PAYMENT_SYNC_SECONDS: '1',
  LATE_PAYMENT_WATCH_SECONDS: '60',
  LATE_PAYMENT_POLL_SECONDS: '1',
  PAYMENT_PROVIDER_TIMEOUT_MS: '700',
};

export { reseller } from './harness';

/** Polls GET /orders/{id} until the order reaches `status`; returns the detail. */
export async function waitForOrderStatus(api: ReturnType<typeof client>, orderId: string, status: string) {
  return eventually(async () => {
    const res = await api.get(`/orders/${orderId}`);
    return res.body.status === status ? res.body : undefined;
  });
}
