import type { EntityManager } from '@mikro-orm/postgresql';
import {
  accountsNearTopupLimit,
  oldestNeedsAttentionSeconds,
  oldestUndeliveredEventSeconds,
  ordersNeedingAttention,
  pendingIntentOrders,
  pendingTopups,
  undeliveredWebhooks,
} from './registry';

/**
 * Sets the gauges whose truth is in Postgres, just before a scrape: one query, so the numbers
 * are one consistent reading, and no process has to keep them up to date by hand.
 */
export async function readStateGauges(em: EntityManager, maxPendingTopups: number): Promise<void> {
  const [row] = await em.execute<
    { attention: string; attention_age: string | null; intent: string; topups: string; near_limit: string; pending_deliveries: string; oldest_event_age: string | null }[]
  >(
    `select
       (select count(*) from orders where fulfillment_status = 'needs_attention') as attention,
       (select extract(epoch from now() - min(updated_at)) from orders where fulfillment_status = 'needs_attention') as attention_age,
       (select count(*) from orders where kind <> 'topup' and payment = 'intent' and status = 'pending') as intent,
       (select count(*) from orders where kind = 'topup' and status = 'pending') as topups,
       (select count(*) from (select account_id from orders where kind = 'topup' and status = 'pending'
                               group by account_id having count(*) >= ?) t) as near_limit,
       (select count(*) from webhook_deliveries where status = 'pending') as pending_deliveries,
       (select extract(epoch from now() - min(e.created_at)) from webhook_deliveries d join events e on e.id = d.event_id
         where d.status = 'pending') as oldest_event_age`,
    [Math.max(1, maxPendingTopups - 1)],
  );
  ordersNeedingAttention.set(Number(row.attention));
  oldestNeedsAttentionSeconds.set(Math.max(0, Number(row.attention_age ?? 0)));
  pendingIntentOrders.set(Number(row.intent));
  pendingTopups.set(Number(row.topups));
  accountsNearTopupLimit.set(Number(row.near_limit));
  undeliveredWebhooks.set(Number(row.pending_deliveries));
  oldestUndeliveredEventSeconds.set(Math.max(0, Number(row.oldest_event_age ?? 0)));
}
