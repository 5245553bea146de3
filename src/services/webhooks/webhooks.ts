import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import { markEventDispatched } from '../../db/events-store';
import {
  deleteEndpoint,
  deliveryPage,
  endpointOf,
  holdEndpoint,
  insertDeliveryRow,
  lockDelivery,
  resetDelivery,
  upsertEndpoint,
  type DeliveryRow,
} from '../../db/webhooks-store';
import { newId } from '../../codes';
import { ApiError } from '../../domain/errors';
import { isCleanId } from '../../domain/text';
import type { UrlPolicy } from '../../domain/webhook-url';
import type { TemporalHandle } from '../../temporal/client';
import { deliveryStarter } from '../../temporal/starters';
import { retryNowSignal } from '../../contracts/webhooks-contract';
import { decodeCursor, pageOf, type CursorScope, type Page } from '../cursor';
import { recordEvent } from './events';
import { findEndpoint } from './webhook-endpoints';
import { systemResolver, validateWebhookUrl, type Resolver } from './webhook-sender';
import {
  resolveSubscription,
  subscriptionFields,
  subscriptionOf,
  type SubscriptionChange,
} from './webhook-subscriptions';

// Webhook endpoint configuration and delivery records (spec 4.5, 3.5). Deliveries are created
// from the events outbox (webhook-dispatcher.ts, or directly for webhook.test) and driven by
// one webhookDeliveryWorkflow each.

export const TEST_EVENT_MESSAGE = 'This is a test event from the Wholesale API.';

/**
 * PUT /webhook: `""` clears it (and what it receives); otherwise the URL is validated (including
 * where its name resolves now) and stored with a fresh signing secret, which is returned this
 * once, and with the events it receives (./webhook-subscriptions).
 */
export async function configureWebhook(
  em: EntityManager,
  accountId: string,
  rawUrl: string,
  opts: { policy: UrlPolicy; resolver?: Resolver; subscription?: SubscriptionChange },
): Promise<{ ok: true; url: string; secret?: string; events?: string[]; balanceLowThreshold?: string }> {
  if (rawUrl === '') {
    await deleteEndpoint(em, accountId);
    return { ok: true, url: '' };
  }
  const url = await validateWebhookUrl(rawUrl, opts.policy, opts.resolver ?? systemResolver);
  const subscription = resolveSubscription(subscriptionOf(await endpointOf(em, accountId)), opts.subscription ?? {});
  const secret = `whsec_${randomBytes(24).toString('base64url')}`;
  await upsertEndpoint(em, accountId, { url, secret, ...subscription });
  return { ok: true, url, secret, ...subscriptionFields(subscription) };
}

export async function getWebhook(
  em: EntityManager,
  accountId: string,
): Promise<{ url: string; events?: string[]; balanceLowThreshold?: string }> {
  const endpoint = await endpointOf(em, accountId);
  return { url: endpoint?.url ?? '', ...subscriptionFields(subscriptionOf(endpoint)) };
}

/** Inserts the delivery of an event; undefined if the event already has one (unique event_id). */
export async function insertDelivery(
  em: EntityManager,
  eventId: string,
  accountId: string,
): Promise<string | undefined> {
  return insertDeliveryRow(em, newId('whd'), eventId, accountId);
}

/**
 * Starts the delivery workflow, harmless to repeat: a running workflow is kept (`ensure`) or told
 * to attempt now (`retry`), and a closed one gets a new run, which is what a delivery row still
 * pending needs (the previous run failed, or a retry's signal never arrived).
 */
export async function startDeliveryWorkflow(
  temporal: TemporalHandle,
  config: Config,
  delivery: { id: string; accountId: string },
  mode: 'ensure' | 'retry',
): Promise<void> {
  const starter = deliveryStarter(temporal, config, delivery);
  if (mode === 'retry') await starter.signalWithStart(retryNowSignal, []);
  else await starter.start();
}

/**
 * POST /webhook/test: a `webhook.test` event and its delivery, persisted together, then sent.
 * If Temporal cannot be reached the delivery stays pending and the reconciler starts it.
 */
export async function sendTestEvent(
  deps: { em: EntityManager; temporal: TemporalHandle; config: Config; onStartError?: (err: unknown) => void },
  accountId: string,
): Promise<{ ok: true; deliveryId: string; eventId: string }> {
  const created = await deps.em.transactional(async (tx) => {
    if (!(await holdEndpoint(tx, accountId)))
      throw new ApiError('webhook_not_configured', 'No webhook is configured; set one with PUT /webhook');
    const eventId = (await recordEvent(tx, accountId, 'webhook.test', { message: TEST_EVENT_MESSAGE }))!;
    const deliveryId = (await insertDelivery(tx, eventId, accountId))!;
    await markEventDispatched(tx, eventId);
    return { eventId, deliveryId };
  });
  try {
    await startDeliveryWorkflow(deps.temporal, deps.config, { id: created.deliveryId, accountId }, 'ensure');
  } catch (err) {
    deps.onStartError?.(err);
  }
  return { ok: true, ...created };
}

const unix = (d: Date | string | null) => (d === null ? null : Math.floor(new Date(d).getTime() / 1000));

export function deliveryItem(r: DeliveryRow) {
  return {
    id: r.id,
    eventId: r.event_id,
    event: r.event,
    status: r.status as 'pending' | 'succeeded' | 'failed' | 'cancelled',
    attempts: r.attempts,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    nextAttemptAt: r.status === 'pending' ? unix(r.next_attempt_at) : null,
    createdAt: unix(r.created_at)!,
    updatedAt: unix(r.updated_at)!,
  };
}

// Postgres' own text form of a timestamptz, as the list writes it into the cursor.
const PG_TIMESTAMPTZ = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?[+-](\d{2})(:\d{2}){0,2}$/;

function isPgTimestamp(s: string): boolean {
  const m = PG_TIMESTAMPTZ.exec(s);
  if (!m) return false;
  const [y, mo, d, h, mi, sec, , off] = m.slice(1).map(Number);
  const day = new Date(Date.UTC(y, mo - 1, d));
  return (
    y >= 1 &&
    day.getUTCFullYear() === y &&
    day.getUTCMonth() === mo - 1 &&
    day.getUTCDate() === d &&
    h < 24 &&
    mi < 60 &&
    sec < 60 &&
    off <= 15
  );
}

/** `<created_at>|<delivery id>`, as written by the list below. */
function deliveryPosition(p: unknown): { createdAt: string; id: string } | undefined {
  if (typeof p !== 'string') return undefined;
  const split = p.indexOf('|');
  if (split < 0) return undefined;
  const createdAt = p.slice(0, split);
  const id = p.slice(split + 1);
  return isPgTimestamp(createdAt) && id && id.length <= 255 && isCleanId(id) ? { createdAt, id } : undefined;
}

/** GET /webhook/deliveries: newest first, keyset-paginated on (created_at, id). */
export async function listDeliveries(
  em: EntityManager,
  q: { accountId: string; limit: number; cursor?: string; cursorSecret: string },
): Promise<Page<ReturnType<typeof deliveryItem>>> {
  const scope: CursorScope = {
    secret: q.cursorSecret,
    accountId: q.accountId,
    list: 'webhook_deliveries',
    filters: {},
  };
  const after = q.cursor ? decodeCursor(scope, q.cursor, deliveryPosition) : undefined;
  const rows = await deliveryPage(em, { accountId: q.accountId, after, limit: q.limit + 1 });
  return pageOf(rows, q.limit, deliveryItem, (r) => `${r.position}|${r.id}`, scope);
}

/**
 * POST /webhook/deliveries/{id}/retry: a failed or cancelled delivery is reset and attempted at
 * once with a fresh attempt budget; a pending one waiting for its backoff is attempted now; a
 * succeeded one is sent again (same event id, so receivers dedupe it).
 */
export async function retryDelivery(
  deps: { em: EntityManager; temporal: TemporalHandle; config: Config },
  accountId: string,
  deliveryId: string,
): Promise<{ ok: true }> {
  await deps.em.transactional(async (tx) => {
    if (!(await lockDelivery(tx, accountId, deliveryId)))
      throw new ApiError('not_found', `Delivery ${deliveryId} not found`);
    if (!(await findEndpoint(tx, accountId))) {
      throw new ApiError(
        'webhook_not_configured',
        'No webhook is configured; set one with PUT /webhook before retrying',
      );
    }
    await resetDelivery(tx, deliveryId);
  });
  await startDeliveryWorkflow(deps.temporal, deps.config, { id: deliveryId, accountId }, 'retry');
  return { ok: true };
}
