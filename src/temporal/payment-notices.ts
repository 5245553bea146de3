import type { Order } from '../db/entities/all-entities';
import { paymentNotifiedSignal } from '../contracts/payments-contract';
import { orderStarter, topupStarter } from './starters';
import type { TemporalHandle } from './client';
import type { TimingConfig } from './timing';

type PaymentOrder = Pick<Order, 'id' | 'kind' | 'accountId' | 'externalOrderId' | 'externalTopupId'>;

/**
 * Tells an order's or top-up's workflow that its checkout was paid, starting a new run if the old
 * one closed (a late payment is still reconciled there). The one way a confirmed payment reaches
 * the workflows, from a provider's callback or from our own chain watch alike.
 */
export async function notifyPaid(temporal: TemporalHandle, config: TimingConfig, order: PaymentOrder): Promise<void> {
  await paymentStarter(temporal, config, order).signalWithStart(paymentNotifiedSignal, [
    { orderId: order.id, status: 'paid' },
  ]);
}

/**
 * The reconciler's repair of a pending order or top-up whose workflow closed or never started: the
 * same signal-with-start, telling nothing but the order's id, so a new run follows its payment
 * (status sync, expiry, late payment).
 */
export async function followPayment(
  temporal: TemporalHandle,
  config: TimingConfig,
  order: PaymentOrder,
): Promise<void> {
  await paymentStarter(temporal, config, order).signalWithStart(paymentNotifiedSignal, [
    { orderId: order.id, status: 'follow' },
  ]);
}

/** The workflow that follows an order's or top-up's payment. */
export function paymentStarter(temporal: TemporalHandle, config: TimingConfig, order: PaymentOrder) {
  return order.kind === 'topup'
    ? topupStarter(temporal, config, { accountId: order.accountId, key: order.externalTopupId ?? order.id })
    : orderStarter(temporal, config, { accountId: order.accountId, externalOrderId: order.externalOrderId! });
}
