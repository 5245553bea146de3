import express, { Router } from 'express';
import type { AppContext } from '../context';
import { OrderSchema } from '../../db/entities';
import { ApiError } from '../../domain/errors';
import type { PaymentProvider } from '../../providers/payments';
import { SIGNATURE_HEADER } from '../../providers/sandbox-payments';
import { checkoutAbandoned } from '../../services/payments';
import { orderWorkflowId } from '../../temporal/orders';
import { paymentNotifiedSignal, topupWorkflowId, type PaymentNotice } from '../../temporal/payments';
import { paymentTiming } from '../../config';
import { assertCleanInput } from '../hygiene';

/**
 * The provider's payment callback. The signature is checked over the raw body; a paid callback
 * signals the order's or top-up's workflow (starting a new run if the old one closed, so a late
 * payment is still reconciled); an abandoned one kills the checkout link. Errors are the spec's
 * error body, from the app's error handler.
 */
export function paymentCallbackRoutes(ctx: AppContext, provider: PaymentProvider): Router {
  const router = Router();
  router.post('/callback', express.raw({ type: '*/*', limit: '64kb' }), async (req, res) => {
    const notice = provider.verifyCallback(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), req.header(SIGNATURE_HEADER));
    if (!notice) throw new ApiError('unauthorized', 'Bad callback signature');
    // Signed is not the same as well-formed: the hygiene rule holds for the provider too.
    assertCleanInput({ body: notice }, { ids: true });
    const em = ctx.orm.em.fork();
    const order = await em.findOne(OrderSchema, { checkoutId: notice.checkoutId });
    if (!order) throw new ApiError('not_found', 'Unknown checkout');
    if (notice.status === 'abandoned') {
      await checkoutAbandoned(em, notice.checkoutId);
      return void res.json({ ok: true });
    }
    if (order.status === 'pending' || order.status === 'expired') {
      const timing = paymentTiming(ctx.config);
      const signal = { signal: paymentNotifiedSignal, signalArgs: [{ orderId: order.id, status: 'paid' }] as [PaymentNotice] };
      if (order.kind === 'topup') {
        const key = order.externalTopupId ?? order.id;
        await ctx.temporal.client.workflow.signalWithStart('topupWorkflow', {
          workflowId: topupWorkflowId(order.accountId, key), taskQueue: ctx.temporal.taskQueue,
          args: [{ accountId: order.accountId, key, timing }], ...signal,
        });
      } else {
        await ctx.temporal.client.workflow.signalWithStart('orderWorkflow', {
          workflowId: orderWorkflowId(order.accountId, order.externalOrderId!), taskQueue: ctx.temporal.taskQueue,
          args: [{ accountId: order.accountId, externalOrderId: order.externalOrderId!, timing }], ...signal,
        });
      }
    }
    res.json({ ok: true });
  });
  return router;
}
