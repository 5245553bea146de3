import { randomBytes } from 'node:crypto';
import express, { Router } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import type { Orm } from '../../db/orm';
import {
  insertSandboxCheckout,
  markSandboxCheckoutAbandoned,
  markSandboxCheckoutPaid,
  sandboxCheckout,
  type SandboxCheckoutRow,
} from './sandbox-store';
import type { CheckoutRequest } from '../payment-provider';
import { SIGNATURE_HEADER, sign, type CheckoutCreated, type CheckoutState } from './sandbox-payment-protocol';

// The built-in sandbox crypto checkout itself: the provider's part, played for real by this
// service. It keeps its checkouts in `sandbox_checkouts`, answers its HTTP API (create a checkout,
// read its status) and sends signed callbacks; its hosted page is src/pages/checkout.ts. The
// service reaches it only through its client (sandbox-payment-client.ts). Tests and `npm start`
// demos steer it with `sandboxControl` (in-process) or the SANDBOX_* settings.

export { sign };

export interface SandboxControl {
  /** How the provider API answers: normally, with 502, or not before the client times out. */
  fault: 'none' | 'error' | 'timeout';
  /** Which API calls the fault applies to. */
  faultOn: 'create' | 'status' | 'both';
  /** Delay before the payment callback is sent; `suppress` never sends it (status sync only). */
  callbackDelayMs: number;
  suppressCallback: boolean;
}

export const sandboxControl: SandboxControl = {
  fault: 'none',
  faultOn: 'create',
  callbackDelayMs: 0,
  suppressCallback: false,
};

/** Back to normal answers, or to what SANDBOX_PAYMENT_FAULT and SANDBOX_CALLBACK_DELAY_MS say. */
export function resetSandboxControl(
  config?: Pick<Config, 'SANDBOX_PAYMENT_FAULT' | 'SANDBOX_CALLBACK_DELAY_MS'>,
): void {
  Object.assign(sandboxControl, {
    fault: config?.SANDBOX_PAYMENT_FAULT ?? 'none',
    faultOn: 'create',
    callbackDelayMs: config?.SANDBOX_CALLBACK_DELAY_MS ?? 0,
    suppressCallback: false,
  });
}

/** A sandbox checkout as its table holds it. */
export type CheckoutRow = SandboxCheckoutRow;

export async function findCheckout(em: EntityManager, id: string): Promise<CheckoutRow | undefined> {
  return sandboxCheckout(em, id);
}

/**
 * The payer pays: the provider records it and notifies the merchant with a signed callback.
 * `callback` settles once the callback was delivered or given up.
 */
export async function payCheckout(
  em: EntityManager,
  secret: string,
  checkoutId: string,
): Promise<(CheckoutRow & { callback: Promise<void> }) | undefined> {
  const row = await markSandboxCheckoutPaid(em, checkoutId);
  return row ? { ...row, callback: notify(secret, row, 'paid') } : undefined;
}

export async function abandonCheckout(
  em: EntityManager,
  secret: string,
  checkoutId: string,
): Promise<CheckoutRow | undefined> {
  const row = await markSandboxCheckoutAbandoned(em, checkoutId);
  if (row) void notify(secret, row, 'abandoned');
  return row;
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

/** The sandbox provider's HTTP API, served by this service under /sandbox-pay. */
export function sandboxPaymentApi(deps: { orm: Orm; config: Config }): Router {
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
    await insertSandboxCheckout(orm.em.fork(), {
      id,
      reference: b.reference,
      amount: b.amount,
      currency: b.currency,
      description: b.description,
      callbackUrl: b.callbackUrl,
    });
    res.json({ id, url: `${config.publicBaseUrl}/checkout/${id}` } satisfies CheckoutCreated);
  });
  api.get('/v1/checkouts/:id', async (req, res) => {
    if (await applyFault('status', config.PAYMENT_PROVIDER_TIMEOUT_MS, res)) return;
    const row = await findCheckout(orm.em.fork(), req.params.id);
    if (!row) return void res.status(404).json({ error: 'not_found' });
    const paidAt = row.paid_at ? Math.floor(new Date(row.paid_at).getTime() / 1000) : null;
    res.json({ id: row.id, status: row.status, paidAt } satisfies CheckoutState);
  });
  return api;
}
