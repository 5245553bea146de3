import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { redemptionByCode, redemptionById, submitRedemption } from '../../services/redemptions/redemptions';
import type { AppContext } from '../context';
import { rateLimit } from '../middleware';
import { z } from '../openapi';
import { IdString } from '../hygiene';
import { addRoute } from '../route';
import { parseKeyRing } from '../../temporal/codec';

export const SubmitRedemptionBody = z
  .object({
    code: IdString(64).openapi({ example: 'ABCD-EFGH-JKMN-PQRS' }),
    // Strings keyed by redeemFields[].key; the shared redeemInfo validation reports bad keys and
    // values with the spec's codes (test-product codes accept anything).
    redeemInfo: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ example: { session_user_id: '00000000-0000-4000-8000-000000000000' } }),
  })
  .strict()
  .openapi('SubmitRedemption');

export const RedemptionSubmitted = z
  .object({ redemptionId: z.string(), status: z.literal('pending'), code: z.string(), orderId: z.string() })
  .openapi('RedemptionSubmitted');

export const Redemption = z
  .object({
    redemptionId: z.string().nullable(),
    code: z.string(),
    orderId: z.string(),
    externalOrderId: z.string().nullable(),
    productId: z.string(),
    status: z.enum(['not_redeemed', 'pending', 'processing', 'fulfilled', 'failed']),
    retryable: z.boolean(),
    failureCode: z.enum(['fulfillment_failed', 'rejected_by_operator']).nullable(),
    deliverable: z.string().nullable(),
    createdAt: z.number().int().nullable(),
    fulfilledAt: z.number().int().nullable(),
  })
  .openapi('Redemption');

export function redemptionRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  // 60 submissions per minute per key (spec 8); queries stay under the general limit.
  router.use(
    '/redemptions',
    rateLimit(ctx, {
      name: 'redemptions',
      limit: ctx.config.REDEMPTION_RATE_LIMIT_PER_MINUTE,
      windowSeconds: 60,
      methods: ['POST'],
    }),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/redemptions',
      operationId: 'submitRedemption',
      scope: 'redemptions',
      tag: 'Redemptions',
      summary: "Submit a code with the end customer's redeemInfo (server-side redemption)",
      body: SubmitRedemptionBody,
      response: RedemptionSubmitted,
      errors: [
        'missing_field',
        'invalid_account_id',
        'invalid_session_json',
        'invalid_telegram_username',
        'test_code_only',
        'invalid_code',
        'already_redeemed',
        'retry_conflict',
        'code_expired',
        'session_validation_unavailable',
      ],
    },
    async ({ body, principal }) =>
      submitRedemption(
        {
          em: ctx.orm.em.fork(),
          temporal: ctx.temporal,
          upstream: ctx.providers.upstream,
          config: ctx.config,
          keys: parseKeyRing(ctx.config.TEMPORAL_PAYLOAD_KEYS),
        },
        { source: 'api', accountId: principal.account.id },
        { code: body.code, redeemInfo: body.redeemInfo ?? {} },
      ),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/redemptions',
      operationId: 'getRedemptionByCode',
      tag: 'Redemptions',
      summary: 'The redemption of a code; not_redeemed when never submitted',
      query: z.object({ code: IdString(64) }),
      response: Redemption,
      errors: ['invalid_code'],
    },
    async ({ query, principal }) =>
      redemptionByCode(ctx.orm.em.fork(), { source: 'api', accountId: principal.account.id }, query.code),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/redemptions/:id',
      operationId: 'getRedemption',
      tag: 'Redemptions',
      summary: 'A redemption (source of truth; webhooks are push only)',
      params: z.object({ id: IdString(128) }),
      response: Redemption,
      errors: ['not_found'],
    },
    async ({ params, principal }) => redemptionById(ctx.orm.em.fork(), principal.account.id, params.id),
  );
}
