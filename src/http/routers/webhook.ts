import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { MAX_WEBHOOK_URL_LENGTH } from '../../domain/webhook-url';
import { urlPolicy } from '../../services/webhook-endpoints';
import { configureWebhook, getWebhook, listDeliveries, retryDelivery, sendTestEvent } from '../../services/webhooks';
import type { AppContext } from '../context';
import { z } from '../openapi';
import { isCleanId } from '../../domain/text';
import { IdString } from '../hygiene';
import { addRoute } from '../route';
import { Cursor, Limit } from '../schemas';

export const PutWebhookBody = z
  .object({
    url: z
      .string()
      .max(MAX_WEBHOOK_URL_LENGTH)
      .refine(isCleanId, 'must be well-formed text without control characters')
      .openapi({ description: 'A public https:// URL, or "" to clear the webhook', example: 'https://example.com/hooks/wholesale' }),
  })
  .strict()
  .openapi('PutWebhook');

const WebhookConfigured = z
  .object({
    ok: z.literal(true),
    url: z.string(),
    secret: z.string().optional().openapi({ description: 'Signing secret, returned once; rotates on every reconfiguration' }),
  })
  .openapi('WebhookConfigured');

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

  addRoute(router, registry, mount, {
    method: 'put', path: '/webhook', operationId: 'setWebhook', tag: 'Webhooks', scope: 'webhooks', summary: 'Set or clear the webhook URL; returns a new signing secret once',
    body: PutWebhookBody, response: WebhookConfigured,
  }, async ({ body, principal }) => configureWebhook(ctx.orm.em.fork(), principal.account.id, body.url, { policy }));

  addRoute(router, registry, mount, {
    method: 'get', path: '/webhook', operationId: 'getWebhook', tag: 'Webhooks', scope: 'webhooks', summary: 'The configured webhook URL ("" when none); never the secret',
    response: z.object({ url: z.string() }),
  }, async ({ principal }) => getWebhook(ctx.orm.em.fork(), principal.account.id));

  addRoute(router, registry, mount, {
    method: 'post', path: '/webhook/test', operationId: 'sendTestWebhook', tag: 'Webhooks', scope: 'webhooks', summary: 'Persist and send a webhook.test event',
    response: z.object({ ok: z.literal(true), deliveryId: z.string(), eventId: z.string() }),
    errors: ['webhook_not_configured'],
  }, async ({ principal }) =>
    sendTestEvent(
      {
        em: ctx.orm.em.fork(), temporal: ctx.temporal, config: ctx.config,
        onStartError: (err) => ctx.logger.warn({ err }, 'webhook.test delivery left for the reconciler'),
      },
      principal.account.id,
    ));

  addRoute(router, registry, mount, {
    method: 'get', path: '/webhook/deliveries', operationId: 'listWebhookDeliveries', tag: 'Webhooks', scope: 'webhooks', summary: 'Webhook deliveries, newest first',
    query: z.object({ limit: Limit, cursor: Cursor }),
    response: z.object({ deliveries: z.array(WebhookDelivery), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
    errors: ['invalid_cursor'],
  }, async ({ query, principal }) => {
    const page = await listDeliveries(ctx.orm.em.fork(), { ...query, accountId: principal.account.id, cursorSecret: ctx.config.CURSOR_SECRET });
    return { deliveries: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore };
  });

  addRoute(router, registry, mount, {
    method: 'post', path: '/webhook/deliveries/:id/retry', operationId: 'retryWebhookDelivery', tag: 'Webhooks', scope: 'webhooks', summary: 'Reset and retry a delivery at once',
    params: z.object({ id: IdString(128) }),
    response: z.object({ ok: z.literal(true) }),
    errors: ['not_found', 'webhook_not_configured'],
  }, async ({ params, principal }) =>
    retryDelivery({ em: ctx.orm.em.fork(), temporal: ctx.temporal, config: ctx.config }, principal.account.id, params.id));
}
