import express, { Router } from 'express';
import type { AppContext } from '../context';
import { ApiError } from '../../domain/errors';
import { acceptCallback } from '../../services/payments/payments';
import { notifyPaid } from '../../temporal/payment-notices';
import { assertCleanInput } from '../hygiene';

/**
 * The provider's payment callback. The signature is checked over the raw body; a paid callback is
 * recorded as the payment's confirmation (what settlement looks for) and then signals the order's
 * or top-up's workflow (starting a new run if the old one closed, so a late payment is still
 * reconciled); an abandoned one kills the checkout link. Errors are the spec's error body, from
 * the app's error handler.
 */
export function paymentCallbackRoutes(ctx: AppContext): Router {
  const { payments } = ctx.providers;
  const router = Router();
  router.post('/callback', express.raw({ type: '*/*', limit: '64kb' }), async (req, res) => {
    const notice = payments.verifyCallback(
      Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      req.header(payments.signatureHeader),
    );
    if (!notice) throw new ApiError('unauthorized', 'Bad callback signature');
    // Signed is not the same as well-formed: the hygiene rule holds for the provider too.
    assertCleanInput({ body: notice }, { ids: true });
    const payable = await acceptCallback(ctx.orm.em.fork(), notice);
    if (payable) await notifyPaid(ctx.temporal, ctx.config, payable);
    res.json({ ok: true });
  });
  return router;
}
