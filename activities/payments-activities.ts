import { log } from '@temporalio/activity';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import { fromDb, toDecimal } from '../src/domain/money';
import { paymentCallbackUrl, type PaymentProvider, type PaymentStatus } from '../src/providers/payment-provider';
import {
  expirePayment,
  paymentFactFor,
  paymentState,
  recordStatusConfirmation,
  settlePayment,
  type SettleOutcome,
} from '../src/services/payments/payments';
import { findTopupByWorkflowKey, openTopup } from '../src/services/payments/topup-opening';
import type { OpenTopupRequest, TopupOpening } from '../src/contracts/topups-contract';
import type { SealedSecrets } from '../src/contracts/orders-contract';
import { sealAnswer } from '../src/temporal/sealed-answer';
import { asRejection } from './activity-errors';
import { paymentConfirmations, paymentNoticesUnverified, topupsCredited } from '../src/metrics/registry';

/** What confirmed a payment: the provider's callback, our status sync, or either after expiry. */
export type ConfirmationPath = 'callback' | 'status_sync' | 'late';

export function createPaymentActivities(deps: { orm: Orm; config: Config; payments: PaymentProvider }) {
  const { orm, config, payments } = deps;
  const settings = {
    levelThresholds: config.LEVEL_THRESHOLDS,
    publicBaseUrl: config.publicBaseUrl,
    paid: paymentFactFor(config.PAYMENT_PROVIDER),
  };
  return {
    /**
     * Opens a top-up's hosted checkout and stores it, run as a local activity in the update handler
     * (early return). A rejection (limit, conflict, provider 502/504) is an answer, not a failure.
     */
    async openTopup(req: OpenTopupRequest & { accountId: string }): Promise<TopupOpening> {
      return asRejection(async () => {
        const { order, reused } = await openTopup(orm.em.fork(), payments, req, {
          maxPending: config.MAX_PENDING_TOPUPS,
          paymentWindowSeconds: config.PAYMENT_WINDOW_SECONDS,
          callbackUrl: paymentCallbackUrl(config),
        });
        const opened = { outcome: 'opened' as const, orderId: order.id, reused, status: order.status };
        if (reused) return opened;
        const secrets: SealedSecrets = { codes: [], checkoutUrl: order.checkoutUrl ?? null };
        const sealed = req.sealTo ? sealAnswer(req.sealTo, req.placementId, secrets) : undefined;
        return {
          ...opened,
          shown: {
            amount: toDecimal(fromDb(order.amount)),
            idempotencyWarning: order.idempotencyWarning,
            ...(sealed ? { sealed } : {}),
          },
        };
      });
    },

    /**
     * The top-up of a top-up workflow's key, if it was opened: what the workflow asks when no
     * opening reached it (an update admitted just before a Temporal restart can be lost after its
     * opening committed).
     */
    async findOpenedTopup(input: {
      accountId: string;
      key: string;
    }): Promise<{ orderId: string; status: string } | null> {
      const order = await findTopupByWorkflowKey(orm.em.fork(), input.accountId, input.key);
      return order ? { orderId: order.id, status: order.status } : null;
    },

    /**
     * Asks the provider's status endpoint whether the order's checkout was paid; a paid answer is
     * recorded as the payment's confirmation, the fact settlement looks for.
     */
    async syncPayment(orderId: string): Promise<PaymentStatus['status'] | 'no_checkout'> {
      const em = orm.em.fork();
      const state = await paymentState(em, orderId);
      if (!state.checkoutId) return 'no_checkout';
      const { status } = await payments.getStatus(state.checkoutId);
      if (status === 'paid') await recordStatusConfirmation(em, { checkoutId: state.checkoutId, orderId });
      return status;
    },

    /**
     * Settles a payment that Postgres shows; `path` is what reported it (for the metrics only). A
     * notice with nothing on record behind it changes nothing and is counted and logged (ids only).
     */
    async settlePayment(orderId: string, path: ConfirmationPath = 'callback'): Promise<SettleOutcome> {
      const outcome = await settlePayment(orm.em.fork(), orderId, settings, (order) => {
        paymentConfirmations.inc({ path, kind: order.kind === 'topup' ? 'topup' : 'order' });
        if (order.kind === 'topup') topupsCredited.inc({ currency: order.currency });
      });
      if (outcome === 'unverified') {
        const { kind } = await paymentState(orm.em.fork(), orderId);
        paymentNoticesUnverified.inc({ path, kind: kind === 'topup' ? 'topup' : 'order' });
        log.warn('payment notice with no payment on record: nothing settled', { orderId, path });
      }
      return outcome;
    },

    async expirePayment(orderId: string): Promise<string | undefined> {
      return expirePayment(orm.em.fork(), orderId);
    },

    /** Where the payment stands; the checkout's id stays in Postgres (this result is in history). */
    async paymentState(orderId: string): Promise<{ status: string; expiresAt: number | null; kind: string }> {
      const { status, expiresAt, kind } = await paymentState(orm.em.fork(), orderId);
      return { status, expiresAt, kind };
    },
  };
}

export type PaymentActivities = ReturnType<typeof createPaymentActivities>;
