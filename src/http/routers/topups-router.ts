import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { ApiError } from '../../domain/errors';
import { submitTopup } from '../../services/payments/topup-submission';
import type { AppContext } from '../context';
import { z } from '../openapi';
import { IdString } from '../hygiene';
import { addRoute } from '../route';
import { Decimal } from '../schemas';

export const TopupBody = z
  .object({
    externalTopupId: IdString(64).optional(),
    amount: Decimal,
    currency: z
      .enum(['USDT', 'USDC'])
      .optional()
      .transform((v) => v ?? 'USDT')
      .openapi({ description: 'Defaults to `USDT`' }),
  })
  .strict()
  .openapi('CreateTopup');

export const TopupResult = z
  .object({
    orderId: z.string(),
    externalTopupId: z.string().nullable(),
    amount: Decimal,
    status: z.enum(['pending', 'delivered', 'expired', 'refunded']),
    checkoutUrl: z.string().nullable(),
    paymentUrl: z.string().nullable(),
    reused: z.boolean(),
    idempotencyWarning: z.string().optional(),
  })
  .openapi('TopupResult');

export function topupRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/topup',
      operationId: 'createTopup',
      scope: 'topups',
      tag: 'Balance',
      summary: 'Top up the balance through a hosted crypto checkout (idempotent on Idempotency-Key or externalTopupId)',
      headers: z.object({ 'idempotency-key': IdString(64).optional() }),
      body: TopupBody,
      response: TopupResult,
      errors: ['idempotency_conflict', 'too_many_pending_topups', 'payment_provider_error', 'payment_provider_timeout'],
      responseHeaders: ['Warning'],
    },
    async ({ body, headers, res, principal }) => {
      const header = headers['idempotency-key'] as string | undefined;
      if (header !== undefined && body.externalTopupId !== undefined && header !== body.externalTopupId) {
        throw new ApiError('invalid_input', 'Idempotency-Key and externalTopupId differ; send one of them');
      }
      const result = await submitTopup(
        {
          em: ctx.orm.em.fork(),
          temporal: ctx.temporal,
          limits: { perHour: ctx.config.TOPUP_RATE_LIMIT_PER_HOUR, maxPending: ctx.config.MAX_PENDING_TOPUPS },
          config: ctx.config,
          admission: ctx.admission,
          answerKey: ctx.answerKey,
        },
        {
          accountId: principal.account.id,
          externalTopupId: header ?? body.externalTopupId ?? null,
          amount: body.amount,
          currency: body.currency,
          source: 'rest',
        },
      );
      if (result.idempotencyWarning) res.setHeader('Warning', `299 - "${result.idempotencyWarning}"`);
      return result;
    },
  );
}
