import { log } from '@temporalio/activity';
import { webhookAttempts } from '../src/metrics/registry';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import {
  cancelDelivery,
  claimDeliveryAttempt,
  deliveryWithEvent,
  failSpentDelivery,
  recordDeliveryAttempt,
} from '../src/db/webhooks-store';
import {
  sendWebhook,
  webhookBody,
  type Resolver,
  type SendResult,
  type WebhookRequest,
} from '../src/services/webhooks/webhook-sender';
import { findEndpoint, urlPolicy } from '../src/services/webhooks/webhook-endpoints';
import type { DeliveryAttemptInput, DeliveryAttemptResult } from '../src/contracts/webhooks-contract';

export interface WebhookActivityDeps {
  orm: Orm;
  config: Config;
  /** Tests may resolve names their own way; production uses the system resolver. */
  resolver?: Resolver;
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const policy = urlPolicy(deps.config);
  const send = (req: WebhookRequest): Promise<SendResult> =>
    sendWebhook(req, { policy, timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS, resolver: deps.resolver });

  return {
    /**
     * One attempt of one delivery. It reads the account's endpoint as it is now (a reconfigured
     * URL and secret apply to the next attempt), POSTs once and records the result on the
     * delivery row. The HTTP outcome is returned, never thrown: the workflow's backoff is the
     * retry. The attempt is claimed in Postgres before the POST: if this activity runs again before
     * its result was recorded (a database error, a worker that died mid-POST), it is the same
     * attempt, POSTed again under the same delivery id (the receiver dedupes on the event id),
     * and counted once. The budget of WEBHOOK_MAX_ATTEMPTS is the delivery's, kept in Postgres: a
     * run started again for it (the reconciler's) makes only the attempts the lost run left.
     */
    async attemptDelivery(input: DeliveryAttemptInput): Promise<DeliveryAttemptResult> {
      const em = deps.orm.em.fork();
      const row = await deliveryWithEvent(em, input.deliveryId);
      if (!row) return { outcome: 'gone', attempts: 0, statusCode: null, error: 'delivery not found' };

      const endpoint = await findEndpoint(em, row.account_id);
      if (!endpoint) {
        const attempts = await cancelDelivery(em, input.deliveryId, 'webhook not configured');
        log.info('webhook delivery cancelled: no webhook configured', { deliveryId: input.deliveryId });
        return { outcome: 'cancelled', attempts, statusCode: null, error: 'webhook not configured' };
      }

      const claim = await claimDeliveryAttempt(em, input.deliveryId, deps.config.WEBHOOK_MAX_ATTEMPTS);
      if (!claim) {
        const attempts = await failSpentDelivery(em, input.deliveryId);
        log.info('webhook delivery failed: its attempts were spent by an earlier run', {
          deliveryId: input.deliveryId,
          attempts,
        });
        return { outcome: 'failed', attempts, statusCode: null, error: 'attempt budget spent' };
      }
      const { attempt } = claim;
      const body = webhookBody({
        id: row.event_id,
        type: row.type,
        payload: row.payload,
        createdAt: new Date(row.created_at),
      });
      const result = await send({
        url: endpoint.url,
        secret: endpoint.secret,
        eventId: row.event_id,
        deliveryId: `${input.deliveryId}.${attempt}`,
        timestamp: body.timestamp,
        raw: body.raw,
      });

      const outcome = result.ok
        ? 'succeeded'
        : input.retryInSeconds === null || claim.left <= 0
          ? 'failed'
          : 'retrying';
      await recordDeliveryAttempt(em, input.deliveryId, {
        status: outcome === 'retrying' ? 'pending' : outcome,
        statusCode: result.statusCode,
        error: result.error,
        retry: outcome === 'retrying',
        retryInSeconds: input.retryInSeconds ?? 0,
      });
      log.info('webhook delivery attempt', {
        deliveryId: input.deliveryId,
        eventId: row.event_id,
        attempt,
        outcome,
        statusCode: result.statusCode,
        error: result.error,
      });
      webhookAttempts.inc({ outcome: result.ok ? 'succeeded' : 'failed' });
      return { outcome, attempts: attempt, statusCode: result.statusCode, error: result.error };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
