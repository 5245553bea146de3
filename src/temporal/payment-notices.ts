import type { Order } from '../db/entities';
import { paymentNotifiedSignal } from './payments';
import { orderStarter, topupStarter } from './starters';
import type { TemporalHandle } from './client';
import type { TimingConfig } from './timing';

/**
 * Tells an order's or top-up's workflow that its checkout was paid, starting a new run if the old
 * one closed (a late payment is still reconciled there). The one way a confirmed payment reaches
 * the workflows, from a provider's callback or from our own chain watch alike.
 */
export async function notifyPaid(
  temporal: TemporalHandle,
  config: TimingConfig,
  order: Pick<Order, 'id' | 'kind' | 'accountId' | 'externalOrderId' | 'externalTopupId'>,
): Promise<void> {
  const starter =
    order.kind === 'topup'
      ? topupStarter(temporal, config, { accountId: order.accountId, key: order.externalTopupId ?? order.id })
      : orderStarter(temporal, config, { accountId: order.accountId, externalOrderId: order.externalOrderId! });
  await starter.signalWithStart(paymentNotifiedSignal, [{ orderId: order.id, status: 'paid' }]);
}
