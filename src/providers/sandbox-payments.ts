import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import express, { Router } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { fromDb, toDecimal } from '../domain/money';
import { html, page, sendPage } from '../pages/layout';
import { paymentProviderErrors } from '../metrics/registry';
import { providerError, providerTimeout, type Checkout, type CheckoutRequest, type PaymentCallback, type PaymentProvider, type PaymentStatus } from './payments';

// The built-in sandbox crypto checkout. It plays the provider's part for real: an HTTP API
// (create a checkout, read its status), a hosted page where a person pays or abandons, and a
// signed callback to the service. Tests and `npm start` demos steer it with `sandboxControl`
// (in-process) or the SANDBOX_* settings.

export const COMPLIANCE_NOTICE =
  'Pay only from a wallet with no direct or indirect fund flows to sanctioned platforms. Any freeze, hold or loss caused by such ' +
  'addresses is borne by the payer. This service has no association with those entities.';

export const SIGNATURE_HEADER = 'x-sandbox-signature';

export interface SandboxControl {
  /** How the provider API answers: normally, with 502, or not before the client times out. */
  fault: 'none' | 'error' | 'timeout';
  /** Which API calls the fault applies to. */
  faultOn: 'create' | 'status' | 'both';
  /** Delay before the payment callback is sent; `suppress` never sends it (status sync only). */
  callbackDelayMs: number;
  suppressCallback: boolean;
}

export const sandboxControl: SandboxControl = { fault: 'none', faultOn: 'create', callbackDelayMs: 0, suppressCallback: false };

export function resetSandboxControl(config?: Config): void {
  Object.assign(sandboxControl, {
    fault: config?.SANDBOX_PAYMENT_FAULT ?? 'none',
    faultOn: 'create',
    callbackDelayMs: config?.SANDBOX_CALLBACK_DELAY_MS ?? 0,
    suppressCallback: false,
  });
}

export function sign(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

interface CheckoutRow {
  id: string;
  reference: string;
  amount: string;
  currency: string;
  description: string;
  callback_url: string;
  status: 'pending' | 'paid' | 'abandoned';
  paid_at: Date | null;
}

async function findCheckout(em: EntityManager, id: string): Promise<CheckoutRow | undefined> {
  const rows = await em.execute<CheckoutRow[]>('select * from sandbox_checkouts where id = ?', [id]);
  return rows[0];
}

/**
 * The payer pays: the provider records it and notifies the merchant with a signed callback.
 * `callback` settles once the callback was delivered or given up.
 */
export async function payCheckout(em: EntityManager, secret: string, checkoutId: string): Promise<(CheckoutRow & { callback: Promise<void> }) | undefined> {
  const rows = await em.execute<CheckoutRow[]>(
    `update sandbox_checkouts set status = 'paid', paid_at = coalesce(paid_at, now()) where id = ? and status <> 'abandoned' returning *`,
    [checkoutId],
  );
  return rows[0] ? { ...rows[0], callback: notify(secret, rows[0], 'paid') } : undefined;
}

export async function abandonCheckout(em: EntityManager, secret: string, checkoutId: string): Promise<CheckoutRow | undefined> {
  const rows = await em.execute<CheckoutRow[]>(
    `update sandbox_checkouts set status = 'abandoned' where id = ? and status = 'pending' returning *`,
    [checkoutId],
  );
  if (rows[0]) void notify(secret, rows[0], 'abandoned');
  return rows[0];
}

/** Sends the callback (after the configured delay), retrying a few times like a real provider. */
function notify(secret: string, row: CheckoutRow, status: 'paid' | 'abandoned'): Promise<void> {
  if (sandboxControl.suppressCallback) return Promise.resolve();
  const body = JSON.stringify({ checkoutId: row.id, reference: row.reference, status });
  const send = async (): Promise<void> => {
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const res = await fetch(row.callback_url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: sign(secret, body) },
          body,
          signal: AbortSignal.timeout(5000),
        });
        if (res.ok) return;
      } catch {
        // retried below
      }
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  };
  return new Promise((resolve) => setTimeout(() => void send().finally(resolve), sandboxControl.callbackDelayMs));
}

async function applyFault(call: 'create' | 'status', timeoutMs: number, res: express.Response): Promise<boolean> {
  const { fault, faultOn } = sandboxControl;
  if (fault === 'none' || (faultOn !== 'both' && faultOn !== call)) return false;
  if (fault === 'timeout') await new Promise((r) => setTimeout(r, timeoutMs + 1000));
  res.status(fault === 'error' ? 502 : 504).json({ error: fault === 'error' ? 'bad_gateway' : 'gateway_timeout' });
  return true;
}

/** The sandbox provider's HTTP API and hosted checkout pages, served by this service. */
export function sandboxPaymentRoutes(deps: { orm: Orm; config: Config }): { api: Router; pages: Router } {
  const { orm, config } = deps;
  const secret = config.PAYMENT_CALLBACK_SECRET;
  const api = Router();
  api.use(express.json());
  api.use((req, res, next) => {
    if (req.header('authorization') !== `Bearer ${secret}`) return void res.status(401).json({ error: 'unauthorized' });
    next();
  });
  api.post('/v1/checkouts', async (req, res) => {
    if (await applyFault('create', config.PAYMENT_PROVIDER_TIMEOUT_MS, res)) return;
    const b = req.body as CheckoutRequest;
    const id = `chk_${randomBytes(24).toString('base64url')}`;
    await orm.em.fork().execute(
      'insert into sandbox_checkouts (id, reference, amount, currency, description, callback_url) values (?, ?, ?, ?, ?, ?)',
      [id, b.reference, b.amount, b.currency, b.description, b.callbackUrl],
    );
    res.json({ id, url: `${config.publicBaseUrl}/checkout/${id}` });
  });
  api.get('/v1/checkouts/:id', async (req, res) => {
    if (await applyFault('status', config.PAYMENT_PROVIDER_TIMEOUT_MS, res)) return;
    const row = await findCheckout(orm.em.fork(), req.params.id);
    if (!row) return void res.status(404).json({ error: 'not_found' });
    res.json({ id: row.id, status: row.status, paidAt: row.paid_at ? Math.floor(new Date(row.paid_at).getTime() / 1000) : null });
  });

  const pages = Router();
  pages.use(express.urlencoded({ extended: false }));
  pages.get('/:id', async (req, res) => {
    const row = await findCheckout(orm.em.fork(), req.params.id);
    if (!row) return sendPage(res, 404, page({ title: 'Checkout not found', body: html`<h1>Checkout not found</h1><p class="lead">This payment link is not valid.</p>` }));
    sendPage(res, 200, checkoutPage(row));
  });
  for (const action of ['pay', 'abandon'] as const) {
    pages.post(`/:id/${action}`, async (req, res) => {
      const em = orm.em.fork();
      if (action === 'pay') await payCheckout(em, secret, req.params.id);
      else await abandonCheckout(em, secret, req.params.id);
      const row = await findCheckout(em, req.params.id);
      if (!row) return void res.status(404).end();
      sendPage(res, 200, checkoutPage(row));
    });
  }
  return { api, pages };
}

function checkoutPage(row: CheckoutRow): string {
  const amount = toDecimal(fromDb(row.amount));
  const body = html`
    <h1>Pay ${amount} ${row.currency}</h1>
    <p class="lead">${row.description}</p>
    <dl>
      <dt>Amount</dt><dd data-testid="amount">${amount}</dd>
      <dt>Currency</dt><dd data-testid="currency">${row.currency}</dd>
      <dt>Network</dt><dd>${row.currency === 'USDC' ? 'USDC (ERC-20 / TRC-20)' : 'USDT (TRC-20 / ERC-20)'}</dd>
      <dt>Status</dt><dd><span class="status ${row.status === 'paid' ? 'fulfilled' : row.status === 'abandoned' ? 'failed' : ''}" data-testid="status">${row.status}</span></dd>
    </dl>
    <p class="notice" data-testid="compliance">${COMPLIANCE_NOTICE}</p>
    ${row.status === 'pending'
      ? html`<form method="post" action="${row.id}/pay"><button type="submit" data-testid="pay">Pay ${amount} ${row.currency}</button></form>
             <form method="post" action="${row.id}/abandon"><button type="submit" class="secondary" data-testid="abandon" style="background:#5b6475">Abandon</button></form>`
      : row.status === 'paid'
        ? html`<p data-testid="result">Payment received. You can close this page.</p>`
        : html`<p data-testid="result">This checkout was abandoned.</p>`}
    <footer>Sandbox hosted checkout — no real funds move.</footer>`;
  return page({ title: `Pay ${amount} ${row.currency}`, body });
}

/** The service's side: a PaymentProvider client speaking the sandbox provider's HTTP API. */
export class SandboxPaymentClient implements PaymentProvider {
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
    const r = await this.request<{ id: string; url: string }>('/v1/checkouts', { method: 'POST', body: JSON.stringify(req) });
    return { checkoutId: r.id, checkoutUrl: r.url };
  }

  async getStatus(checkoutId: string): Promise<PaymentStatus> {
    const r = await this.request<{ status: PaymentStatus['status']; paidAt: number | null }>(`/v1/checkouts/${encodeURIComponent(checkoutId)}`);
    return { status: r.status, paidAt: r.paidAt ?? undefined };
  }

  verifyCallback(rawBody: Buffer, signature: string | undefined): PaymentCallback | undefined {
    const expected = Buffer.from(sign(this.opts.secret, rawBody));
    const given = Buffer.from(signature ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const body = JSON.parse(rawBody.toString('utf8')) as PaymentCallback;
      if (typeof body.checkoutId !== 'string' || (body.status !== 'paid' && body.status !== 'abandoned')) return undefined;
      return body;
    } catch {
      return undefined;
    }
  }
}

export function createPaymentProvider(config: Config): PaymentProvider {
  return new SandboxPaymentClient({ baseUrl: config.paymentProviderUrl, secret: config.PAYMENT_CALLBACK_SECRET, timeoutMs: config.PAYMENT_PROVIDER_TIMEOUT_MS });
}
