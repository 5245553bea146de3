import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import { OrderSchema } from '../src/db/entities';
import { createResponse, placeOrder, type OrderCreateResponse } from '../src/services/orders';
import type { OrderWorkflowInput, PlaceOrderRequest } from '../src/temporal/orders';
import { businessErrors } from './errors';

export function createOrderActivities(deps: { orm: Orm; config: Config }) {
  const settings = { levelThresholds: deps.config.LEVEL_THRESHOLDS, publicBaseUrl: deps.config.publicBaseUrl };
  return {
    /** Idempotent: a retry after a lost reply finds the order by externalOrderId and reports it reused. */
    async placeOrder(input: OrderWorkflowInput & PlaceOrderRequest): Promise<OrderCreateResponse> {
      return businessErrors(async () => {
        const em = deps.orm.em.fork();
        const { order, reused } = await placeOrder(em, input, settings);
        return createResponse(em, order, { baseUrl: settings.publicBaseUrl, reused, withCheckout: input.payment === 'intent' });
      });
    },

    async orderStatus(orderId: string): Promise<{ status: string; fulfillmentStatus: string | null }> {
      const order = await deps.orm.em.fork().findOneOrFail(OrderSchema, { id: orderId });
      return { status: order.status, fulfillmentStatus: order.fulfillmentStatus ?? null };
    },
  };
}

export type OrderActivities = ReturnType<typeof createOrderActivities>;
