import { ApiError } from '../domain/errors';

// The hosted crypto checkout, as a port: the service never holds the payer's funds itself.

/** Where a provider posts its payment callbacks (src/app.ts mounts the router there). */
export const paymentCallbackUrl = (config: { publicBaseUrl: string }) => `${config.publicBaseUrl}/payments/callback`;

export type PaymentCurrency = 'USDT' | 'USDC';

export interface CheckoutRequest {
  /** Our order id; the provider echoes it in callbacks. */
  reference: string;
  amount: string;
  currency: PaymentCurrency;
  description: string;
  callbackUrl: string;
}

export interface Checkout {
  checkoutId: string;
  /** Secret-ish: whoever has it can pay; shown only to the order's owner, never logged. */
  checkoutUrl: string;
}

export interface PaymentStatus {
  status: 'pending' | 'paid' | 'abandoned';
  paidAt?: number;
}

export interface PaymentCallback {
  checkoutId: string;
  reference: string;
  status: 'paid' | 'abandoned';
}

export interface PaymentProvider {
  /** The request header in which this provider's callbacks carry their signature. */
  readonly signatureHeader: string;
  /** Throws ApiError payment_provider_error (5xx) or payment_provider_timeout. */
  createCheckout(req: CheckoutRequest): Promise<Checkout>;
  getStatus(checkoutId: string): Promise<PaymentStatus>;
  /** Verifies a callback's signature over the raw body; undefined when it does not verify. */
  verifyCallback(rawBody: Buffer, signature: string | undefined): PaymentCallback | undefined;
}

/** Shown wherever a payer is sent to a hosted checkout (the checkout page and the account area). */
export const COMPLIANCE_NOTICE =
  'Pay only from a wallet with no direct or indirect fund flows to sanctioned platforms. Any freeze, hold or loss caused by such ' +
  'addresses is borne by the payer. This service has no association with those entities.';

export const providerError = () =>
  new ApiError('payment_provider_error', 'The payment provider failed; no order was created, retry with the same id');
export const providerTimeout = () =>
  new ApiError(
    'payment_provider_timeout',
    'The payment provider timed out; no order was created, retry with the same id',
  );
