import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import { fromDb, toDecimal } from '../src/domain/money';
import { paymentCallbackUrl, type PaymentProvider } from '../src/providers/payment-provider';
import { findByExternalId, orderStatuses, showsCodes } from '../src/services/orders/orders';
import { sealAnswer } from '../src/temporal/sealed-answer';
import { placeOrder, type OpenCheckout } from '../src/services/orders/order-placement';
import { attachCheckout } from '../src/services/payments/payments';
import type {
  OrderWorkflowInput,
  PlacedView,
  Placement,
  PlaceOrderRequest,
  SealedSecrets,
} from '../src/contracts/orders-contract';
import { placementDuration } from '../src/metrics/registry';
import { asRejection } from './activity-errors';

export function createOrderActivities(deps: { orm: Orm; config: Config; payments: PaymentProvider }) {
  const { orm, config, payments } = deps;
  const openCheckout: OpenCheckout = (orderId, amount, currency, description) =>
    payments.createCheckout({
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
     * The placement the caller waits for, run as a local activity inside the update handler (one
     * Postgres transaction; in intent mode the provider's checkout in between). Idempotent: a retry
     * after a lost reply finds the order by externalOrderId. A pending intent order whose checkout
     * link was lost gets a fresh one when the replay is in intent mode (spec 4.3 rule 4). An
     * expected rejection (402, 409, provider 502/504 …) is an answer, not a failure.
     */
    async placeOrder(input: OrderWorkflowInput & PlaceOrderRequest): Promise<Placement> {
      const timer = placementDuration.startTimer({ payment: input.payment });
      // A replay (the order found by its externalOrderId) is not a placement's work: not timed.
      let replay = false;
      return asRejection(async (): Promise<Placement> => {
        const em = orm.em.fork();
        const { order, reused } = await placeOrder(em, input, settings);
        replay = reused;
        if (
          reused &&
          input.payment === 'intent' &&
          order.status === 'pending' &&
          order.payment === 'intent' &&
          !order.checkoutUrl
        ) {
          const checkout = await openCheckout(order.id, fromDb(order.amount), order.currency, `Order ${order.id}`);
          await attachCheckout(em, order.id, checkout);
        }
        const placed = {
          outcome: 'placed' as const,
          orderId: order.id,
          reused,
          status: order.status,
          fulfillmentStatus: order.fulfillmentStatus ?? null,
        };
        if (reused) return placed;
        // Sealed only when every secret the response shows is known here; else the API reads them.
        const codesKnown = !showsCodes(order) || order.issuedCodes !== undefined;
        const secrets: SealedSecrets = { codes: order.issuedCodes ?? [], checkoutUrl: order.checkoutUrl ?? null };
        const sealed = input.sealTo && codesKnown ? sealAnswer(input.sealTo, input.placementId, secrets) : undefined;
        return {
          ...placed,
          shown: {
            amount: toDecimal(fromDb(order.amount)),
            deliveryType: order.deliveryType as PlacedView['deliveryType'],
            fulfilledQuantity: order.fulfilledQuantity,
            ...(sealed ? { sealed } : {}),
          },
        };
      }).finally(() => {
        if (!replay) timer();
      });
    },

    /**
     * The order of `externalOrderId`, if one was placed: what an order workflow asks when no
     * placement reached it (an update admitted just before a Temporal restart can be lost after
     * its placement committed; the caller's retry is then answered from Postgres).
     */
    async findPlacedOrder(input: {
      accountId: string;
      externalOrderId: string;
    }): Promise<{ orderId: string; status: string; fulfillmentStatus: string | null } | null> {
      const order = await findByExternalId(orm.em.fork(), input.accountId, input.externalOrderId);
      return order
        ? { orderId: order.id, status: order.status, fulfillmentStatus: order.fulfillmentStatus ?? null }
        : null;
    },

    async orderStatus(orderId: string): Promise<{ status: string; fulfillmentStatus: string | null }> {
      return orderStatuses(orm.em.fork(), orderId);
    },
  };
}

export type OrderActivities = ReturnType<typeof createOrderActivities>;
