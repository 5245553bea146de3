import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { MAX_WEBHOOK_URL_LENGTH } from '../../domain/webhook-url';
import { urlPolicy } from '../../services/webhooks/webhook-endpoints';
import {
  configureWebhook,
  getWebhook,
  listDeliveries,
  retryDelivery,
  sendTestEvent,
} from '../../services/webhooks/webhooks';
import type { AppContext } from '../context';
import { z } from '../openapi';
import { isCleanId } from '../../domain/text';
import { IdString } from '../hygiene';
import { addRoute } from '../route';
import { Cursor, Decimal, Limit } from '../schemas';
import { SUBSCRIBABLE_EVENTS } from '../../domain/event-types';
import { resendDeliveries } from '../../services/webhooks/webhook-resend';

const EventName = z.enum(SUBSCRIBABLE_EVENTS as [string, ...string[]]);

// Beyond spec 1.4.0, and only for an endpoint that asks: its own list of events.
const subscriptionFields = {
  events: z
    .array(EventName)
    .min(1)
    .max(SUBSCRIBABLE_EVENTS.length * 2)
    .optional()
    .openapi({
      description:
        'Extension (event subscriptions): the events this endpoint receives. Without a list it receives every event of spec part 6, ' +
        'and `export.ready` and `batch.completed` (sent only to an account that makes exports or batches); ' +
        '`product.updated` and `balance.low` come only to a list that names them. Omitted on PUT: the list is kept. ' +
        '`webhook.test` is always sent when asked for. Answers carry the list only for an endpoint that has one.',
      example: ['order.delivered', 'topup.credited', 'product.updated', 'balance.low'],
    }),
  balanceLowThreshold: Decimal.nullable().optional().openapi({
    description:
      'Extension (event subscriptions): `balance.low` is sent when the balance falls from this amount or above to below it; required with balance.low, and only with it.',
    example: '100.00',
  }),
};

export const PutWebhookBody = z
  .object({
    url: z
      .string()
      .max(MAX_WEBHOOK_URL_LENGTH)
      .refine(isCleanId, 'must be well-formed text without control characters')
      .openapi({
        description: 'A public https:// URL, or "" to clear the webhook',
        example: 'https://example.com/hooks/wholesale',
      }),
    ...subscriptionFields,
  })
  .strict()
  .openapi('PutWebhook');

const answerFields = { events: z.array(EventName).optional(), balanceLowThreshold: Decimal.optional() };

const WebhookConfigured = z
  .object({
    ok: z.literal(true),
    url: z.string(),
    secret: z
      .string()
      .optional()
      .openapi({ description: 'Signing secret, returned once; rotates on every reconfiguration' }),
    ...answerFields,
  })
  .openapi('WebhookConfigured');

const MAX_RESEND = 100;

const ResendBody = z
  .object({
    since: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32)
      .describe('Unix seconds: deliveries created at or after it'),
    until: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32)
      .optional()
      .describe('Unix seconds: deliveries created before it (default: now)'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_RESEND)
      .default(MAX_RESEND)
      .describe(`At most this many per call (1 to ${MAX_RESEND}, default ${MAX_RESEND})`),
  })
  .strict()
  .openapi('ResendDeliveries');

const WebhookDelivery = z
  .object({
    id: z.string(),
    eventId: z.string(),
    event: z.string(),
    status: z.enum(['pending', 'succeeded', 'failed', 'cancelled']),
    attempts: z.number().int(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    nextAttemptAt: z.number().int().nullable(),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi('WebhookDelivery');

export function webhookRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  const policy = urlPolicy(ctx.config);

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'put',
      path: '/webhook',
      operationId: 'setWebhook',
      tag: 'Webhooks',
      scope: 'webhooks',
      summary: 'Set or clear the webhook URL; returns a new signing secret once',
      body: PutWebhookBody,
      response: WebhookConfigured,
    },
    async ({ body, principal }) =>
      configureWebhook(ctx.orm.em.fork(), principal.account.id, body.url, {
        policy,
        subscription: { events: body.events, balanceLowThreshold: body.balanceLowThreshold },
      }),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/webhook',
      operationId: 'getWebhook',
      tag: 'Webhooks',
      scope: 'webhooks',
      summary: 'The configured webhook URL ("" when none); never the secret',
      response: z.object({ url: z.string(), ...answerFields }),
    },
    async ({ principal }) => getWebhook(ctx.orm.em.fork(), principal.account.id),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/webhook/test',
      operationId: 'sendTestWebhook',
      tag: 'Webhooks',
      scope: 'webhooks',
      summary: 'Persist and send a webhook.test event',
      response: z.object({ ok: z.literal(true), deliveryId: z.string(), eventId: z.string() }),
      errors: ['webhook_not_configured'],
    },
    async ({ principal }) =>
      sendTestEvent(
        {
          em: ctx.orm.em.fork(),
          temporal: ctx.temporal,
          config: ctx.config,
          onStartError: (err) => ctx.logger.warn({ err }, 'webhook.test delivery left for the reconciler'),
        },
        principal.account.id,
      ),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/webhook/deliveries',
      operationId: 'listWebhookDeliveries',
      tag: 'Webhooks',
      scope: 'webhooks',
      summary: 'Webhook deliveries, newest first',
      query: z.object({ limit: Limit, cursor: Cursor }),
      response: z.object({
        deliveries: z.array(WebhookDelivery),
        nextCursor: z.string().nullable(),
        hasMore: z.boolean(),
      }),
      errors: ['invalid_cursor'],
    },
    async ({ query, principal }) => {
      const page = await listDeliveries(ctx.orm.em.fork(), {
        ...query,
        accountId: principal.account.id,
        cursorSecret: ctx.config.CURSOR_SECRET,
      });
      return { deliveries: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore };
    },
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/webhook/deliveries/:id/retry',
      operationId: 'retryWebhookDelivery',
      tag: 'Webhooks',
      scope: 'webhooks',
      summary: 'Reset and retry a delivery at once',
      params: z.object({ id: IdString(128) }),
      response: z.object({ ok: z.literal(true) }),
      errors: ['not_found', 'webhook_not_configured'],
    },
    async ({ params, principal }) =>
      retryDelivery(
        { em: ctx.orm.em.fork(), temporal: ctx.temporal, config: ctx.config },
        principal.account.id,
        params.id,
      ),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/webhook/deliveries/resend',
      operationId: 'resendWebhookDeliveries',
      tag: 'Webhooks',
      scope: 'webhooks',
      summary: 'Resend every failed or cancelled delivery created in a time range',
      description:
        'Extension (event subscriptions). Each failed or cancelled delivery created from `since` up to `until` is reset and attempted at ' +
        'once, oldest first, at most `limit` per call; while `hasMore` is true, call again with the same range for the next ones. ' +
        'Repeating a call is harmless: a delivery already resent is pending or succeeded, not failed, so it is not sent twice. ' +
        'A resent delivery keeps its event id, so receivers dedupe it.',
      body: ResendBody,
      response: z.object({
        ok: z.literal(true),
        resent: z.number().int(),
        deliveryIds: z.array(z.string()),
        hasMore: z.boolean(),
      }),
      errors: ['webhook_not_configured'],
    },
    async ({ body, principal }) =>
      resendDeliveries(
        {
          em: ctx.orm.em.fork(),
          temporal: ctx.temporal,
          config: ctx.config,
          onStartError: (err) => ctx.logger.warn({ err }, 'resent webhook delivery left for the reconciler'),
        },
        principal.account.id,
        body,
      ),
  );
}
