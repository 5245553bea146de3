import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import { createPaymentProvider } from '../src/providers/sandbox-payments';
import type { PaymentProvider, PaymentStatus } from '../src/providers/payments';
import { expirePayment, paymentState, settlePayment, type SettleOutcome } from '../src/services/payments';
import { openTopup } from '../src/services/topups';
import type { OpenTopupRequest, TopupCreateResponse } from '../src/temporal/payments';
import { businessErrors } from './errors';

export const paymentCallbackUrl = (config: Config) => `${config.publicBaseUrl}/payments/callback`;

export function createPaymentActivities(deps: { orm: Orm; config: Config; provider?: PaymentProvider }) {
  const { orm, config } = deps;
  const provider = deps.provider ?? createPaymentProvider(config);
  const settings = { levelThresholds: config.LEVEL_THRESHOLDS, publicBaseUrl: config.publicBaseUrl };
  return {
    async openTopup(req: OpenTopupRequest & { accountId: string }): Promise<TopupCreateResponse> {
      return businessErrors(() =>
        openTopup(orm.em.fork(), provider, req, {
          maxPending: config.MAX_PENDING_TOPUPS,
          paymentWindowSeconds: config.PAYMENT_WINDOW_SECONDS,
          callbackUrl: paymentCallbackUrl(config),
        }),
      );
    },

    /** Asks the provider's status endpoint whether the order's checkout was paid. */
    async syncPayment(orderId: string): Promise<PaymentStatus['status'] | 'no_checkout'> {
      const state = await paymentState(orm.em.fork(), orderId);
      if (!state.checkoutId) return 'no_checkout';
      return (await provider.getStatus(state.checkoutId)).status;
    },

    async settlePayment(orderId: string): Promise<SettleOutcome> {
      return settlePayment(orm.em.fork(), orderId, settings);
    },

    async expirePayment(orderId: string): Promise<string | undefined> {
      return expirePayment(orm.em.fork(), orderId);
    },

    async paymentState(orderId: string) {
      return paymentState(orm.em.fork(), orderId);
    },
  };
}

export type PaymentActivities = ReturnType<typeof createPaymentActivities>;
