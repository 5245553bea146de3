import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import { OrderSchema } from '../src/db/entities';
import { fromDb, toDecimal } from '../src/domain/money';
import type { PaymentProvider } from '../src/providers/payments';
import { createPaymentProvider } from '../src/providers/sandbox-payments';
import { createResponse, placeOrder, type OpenCheckout, type OrderCreateResponse } from '../src/services/orders';
import { attachCheckout } from '../src/services/payments';
import type { OrderWorkflowInput, PlaceOrderRequest } from '../src/temporal/orders';
import { businessErrors } from './errors';
import { paymentCallbackUrl } from './payments';

export function createOrderActivities(deps: { orm: Orm; config: Config; provider?: PaymentProvider }) {
  const { orm, config } = deps;
  const provider = deps.provider ?? createPaymentProvider(config);
  const openCheckout: OpenCheckout = (orderId, amount, currency, description) =>
    provider.createCheckout({
      reference: orderId,
      amount: toDecimal(amount),
      currency: currency as 'USDT' | 'USDC',
      description,
      callbackUrl: paymentCallbackUrl(config),
    });
  const settings = {
    levelThresholds: config.LEVEL_THRESHOLDS,
    publicBaseUrl: config.publicBaseUrl,
    openCheckout,
    paymentWindowSeconds: config.PAYMENT_WINDOW_SECONDS,
  };
  return {
    /**
     * Idempotent: a retry after a lost reply finds the order by externalOrderId and reports it
     * reused. A pending intent order whose checkout link was lost gets a fresh one when the
     * replay is in intent mode (spec 4.3 rule 4).
     */
    async placeOrder(input: OrderWorkflowInput & PlaceOrderRequest): Promise<OrderCreateResponse> {
      return businessErrors(async () => {
        const em = orm.em.fork();
        const { order, reused } = await placeOrder(em, input, settings);
        if (reused && input.payment === 'intent' && order.status === 'pending' && order.payment === 'intent' && !order.checkoutUrl) {
          const checkout = await openCheckout(order.id, fromDb(order.amount), order.currency, `Order ${order.id}`);
          await attachCheckout(em, order.id, checkout);
          await em.refresh(order);
        }
        return createResponse(em, order, { baseUrl: config.publicBaseUrl, reused, withCheckout: input.payment === 'intent' });
      });
    },

    async orderStatus(orderId: string): Promise<{ status: string; fulfillmentStatus: string | null }> {
      const order = await orm.em.fork().findOneOrFail(OrderSchema, { id: orderId });
      return { status: order.status, fulfillmentStatus: order.fulfillmentStatus ?? null };
    },
  };
}

export type OrderActivities = ReturnType<typeof createOrderActivities>;
