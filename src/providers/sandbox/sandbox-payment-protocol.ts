import { createHmac } from 'node:crypto';

// The built-in sandbox provider's wire protocol, the only thing its two sides share: the client
// the service calls (sandbox-payment-client.ts) and the sandbox itself, its API and signed
// callbacks (sandbox-payments.ts) and its hosted page (src/pages/checkout.ts).

/** The header that carries a callback's signature. */
export const SIGNATURE_HEADER = 'x-sandbox-signature';

/** HMAC-SHA256 over the raw body with the shared secret, as the callback header carries it. */
export function sign(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** `POST /v1/checkouts` answers this. */
export interface CheckoutCreated {
  id: string;
  url: string;
}

/** `GET /v1/checkouts/:id` answers this; `paidAt` is in Unix seconds. */
export interface CheckoutState {
  id: string;
  status: 'pending' | 'paid' | 'abandoned';
  paidAt: number | null;
}
