import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import {
  claimRedemption,
  decideQueued,
  listQueue,
  releaseQueued,
  type QueueDeps,
} from '../../services/redemptions/operator-queue';
import { settledRedemption } from '../../services/redemptions/redemptions';
import { auditedByToken } from '../../services/accounts/audit';
import { parseKeyRing } from '../../temporal/codec';
import type { AppContext } from '../context';
import { FreeText, IdString } from '../hygiene';
import { z } from '../openapi';
import { addRoute } from '../route';

// The operator queue's admin routes (REDEMPTION_UPSTREAM=operators), mounted by the admin router
// under its token: list, claim, fulfil, fail, release. The claim's answer is the only one that
// carries redeem details.

const Actor = IdString(255).pipe(z.string().trim().min(1)).describe('Who acts (recorded)');
const Reason = FreeText(2000).pipe(z.string().trim().min(1)).describe('Why (recorded)');
const Params = z.object({ id: IdString(128) });

const Claim = z.object({
  holder: z.string(),
  expiresAt: z.number().int().describe('Unix seconds; the claim is free again after it'),
});

const QueueItem = z
  .object({
    redemptionId: z.string(),
    attempt: z.number().int(),
    productId: z.string(),
    productName: z.string(),
    status: z.string(),
    queuedAt: z.number().int(),
    ageSeconds: z.number().int(),
    claim: Claim.nullable(),
  })
  .openapi('OperatorQueueItem');

const ClaimAnswer = z
  .object({
    redemptionId: z.string(),
    attempt: z.number().int(),
    productId: z.string(),
    productName: z.string(),
    claim: Claim,
    redeemInfo: z
      .record(z.string(), z.string())
      .describe('What the end customer submitted, passwords decrypted: shown to the claim holder only'),
  })
  .openapi('OperatorClaim');

const RedemptionOutcome = z
  .object({
    redemptionId: z.string().nullable(),
    status: z.string(),
    failureCode: z.string().nullable(),
    retryable: z.boolean(),
    deliverable: z.string().nullable(),
  })
  .passthrough()
  .openapi('OperatorOutcome');

/** Registers the queue's routes on the admin router (`mount` is its /admin/v1 prefix). */
export function operatorQueueRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  const keys = parseKeyRing(ctx.config.TEMPORAL_PAYLOAD_KEYS);
  const deps = (): QueueDeps => ({
    em: ctx.orm.em.fork(),
    temporal: ctx.temporal,
    keys,
    claimSeconds: ctx.config.OPERATOR_CLAIM_SECONDS,
  });
  const settled = async (ref: { redemptionId: string; attempt: number }) =>
    settledRedemption(ctx.orm.em.fork(), ref, 5_000);

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/redemptions/queue',
      operationId: 'listOperatorQueue',
      tag: 'Support',
      auth: 'admin',
      summary: 'Redemptions waiting for an operator, oldest first, with their claims (never the redeem details)',
      query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
      response: z.object({ redemptions: z.array(QueueItem) }),
    },
    async ({ query }) => ({ redemptions: await listQueue(ctx.orm.em.fork(), query.limit) }),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/redemptions/:id/claim',
      operationId: 'claimQueuedRedemption',
      tag: 'Support',
      auth: 'admin',
      summary:
        'Claim a waiting redemption for OPERATOR_CLAIM_SECONDS (the holder renews by claiming again); answers its redeem details',
      params: Params,
      body: z.object({ actor: Actor, reason: Reason.optional() }).strict().openapi('OperatorClaimBody'),
      response: ClaimAnswer,
      errors: ['not_found', 'claim_conflict'],
    },
    async ({ params, body, res }) => {
      const reason = body.reason ?? 'claimed from the queue';
      return auditedByToken(
        ctx.orm.em,
        res.locals.requestId,
        { action: 'redemption.claim', subjectId: params.id, reason, typedActor: body.actor },
        () => claimRedemption(deps(), params.id, { actor: body.actor, reason }),
      );
    },
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/redemptions/:id/fulfil',
      operationId: 'fulfilQueuedRedemption',
      tag: 'Support',
      auth: 'admin',
      summary: 'The claim holder fulfils the redemption with the deliverable the reseller will see',
      params: Params,
      body: z
        .object({ actor: Actor, reason: Reason, deliverable: FreeText(2000).pipe(z.string().trim().min(1)) })
        .strict()
        .openapi('OperatorFulfilBody'),
      response: RedemptionOutcome,
      errors: ['not_found', 'claim_conflict'],
    },
    async ({ params, body, res }) =>
      auditedByToken(
        ctx.orm.em,
        res.locals.requestId,
        { action: 'redemption.fulfil', subjectId: params.id, reason: body.reason, typedActor: body.actor },
        async () =>
          settled(await decideQueued(deps(), params.id, body, { outcome: 'fulfilled', deliverable: body.deliverable })),
      ),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/redemptions/:id/fail',
      operationId: 'failQueuedRedemption',
      tag: 'Support',
      auth: 'admin',
      summary:
        'The claim holder fails the redemption with a spec failure code; holdsResources makes a resubmission retry_conflict until released',
      params: Params,
      body: z
        .object({
          actor: Actor,
          reason: Reason,
          failureCode: z.enum(['fulfillment_failed', 'rejected_by_operator']),
          holdsResources: z.boolean().default(false),
        })
        .strict()
        .openapi('OperatorFailBody'),
      response: RedemptionOutcome,
      errors: ['not_found', 'claim_conflict'],
    },
    async ({ params, body, res }) => {
      const details = { failureCode: body.failureCode, holdsResources: body.holdsResources };
      return auditedByToken(
        ctx.orm.em,
        res.locals.requestId,
        { action: 'redemption.fail', subjectId: params.id, reason: body.reason, typedActor: body.actor, details },
        async () =>
          settled(
            await decideQueued(deps(), params.id, body, {
              outcome: 'failed',
              failureCode: body.failureCode,
              holdsResources: body.holdsResources,
            }),
          ),
      );
    },
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/redemptions/:id/release',
      operationId: 'releaseQueuedRedemption',
      tag: 'Support',
      auth: 'admin',
      summary: 'The supplier let go of a failed attempt: a resubmission stops being retry_conflict at the next refresh',
      params: Params,
      body: z.object({ actor: Actor, reason: Reason }).strict().openapi('OperatorReleaseBody'),
      response: z.object({ redemptionId: z.string(), attempt: z.number().int() }),
      errors: ['not_found', 'claim_conflict'],
    },
    async ({ params, body, res }) =>
      auditedByToken(
        ctx.orm.em,
        res.locals.requestId,
        { action: 'redemption.release', subjectId: params.id, reason: body.reason, typedActor: body.actor },
        () => releaseQueued(ctx.orm.em.fork(), params.id, body),
      ),
  );
}
