import { timingSafeEqual } from 'node:crypto';
import { paymentProviderErrors } from '../../metrics/registry';
import {
  providerError,
  providerTimeout,
  type Checkout,
  type CheckoutRequest,
  type PaymentCallback,
  type PaymentProvider,
  type PaymentStatus,
} from '../payment-provider';
import { SIGNATURE_HEADER, sign, type CheckoutCreated, type CheckoutState } from './sandbox-payment-protocol';

/**
 * The service's side of the built-in sandbox provider: the PaymentProvider port spoken over the
 * sandbox's HTTP API, wherever that runs (this service's /sandbox-pay by default). It knows the
 * sandbox only by its protocol, as it would know a real provider.
 */
export class SandboxPaymentClient implements PaymentProvider {
  readonly signatureHeader = SIGNATURE_HEADER;

  constructor(private readonly opts: { baseUrl: string; secret: string; timeoutMs: number }) {}

  private async request<T>(path: string, init: RequestInit = {}): Promise<T> {
    const call = init.method === 'POST' ? 'create' : 'status';
    const failed = (kind: 'error' | 'timeout') => {
      paymentProviderErrors.inc({ call, kind });
      return kind === 'timeout' ? providerTimeout() : providerError();
    };
    let res: Response;
    try {
      res = await fetch(`${this.opts.baseUrl}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${this.opts.secret}`, 'content-type': 'application/json' },
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (err) {
      throw failed((err as Error).name === 'TimeoutError' ? 'timeout' : 'error');
    }
    if (res.status === 504) throw failed('timeout');
    if (!res.ok) throw failed('error');
    return (await res.json()) as T;
  }

  async createCheckout(req: CheckoutRequest): Promise<Checkout> {
    const r = await this.request<CheckoutCreated>('/v1/checkouts', { method: 'POST', body: JSON.stringify(req) });
    return { checkoutId: r.id, checkoutUrl: r.url };
  }

  async getStatus(checkoutId: string): Promise<PaymentStatus> {
    const r = await this.request<CheckoutState>(`/v1/checkouts/${encodeURIComponent(checkoutId)}`);
    return { status: r.status, paidAt: r.paidAt ?? undefined };
  }

  verifyCallback(rawBody: Buffer, signature: string | undefined): PaymentCallback | undefined {
    const expected = Buffer.from(sign(this.opts.secret, rawBody));
    const given = Buffer.from(signature ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const body = JSON.parse(rawBody.toString('utf8')) as PaymentCallback;
      if (typeof body.checkoutId !== 'string' || (body.status !== 'paid' && body.status !== 'abandoned'))
        return undefined;
      return body;
    } catch {
      return undefined;
    }
  }
}
