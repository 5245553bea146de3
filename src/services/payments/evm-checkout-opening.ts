import { randomBytes } from 'node:crypto';
import { evmCheckout, insertEvmCheckout, nextDerivationIndex } from '../../db/evm-store';
import type { Orm } from '../../db/orm';
import { paymentProviderErrors } from '../../metrics/registry';
import { evmCheckoutStarter } from '../../temporal/starters';
import {
  providerError,
  type Checkout,
  type CheckoutRequest,
  type PaymentStatus,
} from '../../providers/payment-provider';
import type { EvmCheckoutDeps } from './evm-checkout-watch';

type OpeningDeps = Pick<EvmCheckoutDeps, 'orm' | 'config' | 'temporal' | 'evm'>;

// Opening a self-hosted checkout (PAYMENT_PROVIDER=evm) and reading its status: the EVM adapter's
// payment port is handed these by the composition root (src/bootstrap.ts), so the adapter holds no
// checkout logic. The watch that follows a checkout is ./evm-checkout-watch.ts.

/**
 * A new deposit address (its derivation index is handed out once, ever) and its watch. A watch
 * that cannot be started is the provider failing: the order is not created, the caller retries.
 */
export async function openEvmCheckout(deps: OpeningDeps, req: CheckoutRequest): Promise<Checkout> {
  const em = deps.orm.em.fork();
  const index = await nextDerivationIndex(em);
  const id = `chk_${randomBytes(24).toString('base64url')}`;
  await insertEvmCheckout(em, {
    id,
    reference: req.reference,
    derivationIndex: index,
    ...deps.evm.depositAddresses(index),
    amount: req.amount,
    currency: req.currency,
  });
  try {
    await evmCheckoutStarter(deps.temporal, deps.config, { orderId: req.reference, depositIndex: index }).start();
  } catch {
    paymentProviderErrors.inc({ call: 'create', kind: 'error' });
    throw providerError();
  }
  return { checkoutId: id, checkoutUrl: `${deps.config.publicBaseUrl}/checkout/${id}` };
}

/** What the watch recorded: paid once confirmed money reached the amount. */
export async function evmCheckoutStatus(orm: Orm, checkoutId: string): Promise<PaymentStatus> {
  const row = await evmCheckout(orm.em.fork(), checkoutId);
  if (!row?.paid_at) return { status: 'pending' };
  return { status: 'paid', paidAt: Math.floor(new Date(row.paid_at).getTime() / 1000) };
}
