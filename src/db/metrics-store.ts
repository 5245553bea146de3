import type { EntityManager } from '@mikro-orm/postgresql';

// The numbers behind the state gauges of /metrics, read in one statement so they are one
// consistent reading.

export interface StateGaugeRow {
  attention: string;
  attention_age: string | null;
  intent: string;
  topups: string;
  near_limit: string;
  pending_deliveries: string;
  oldest_event_age: string | null;
}

/** `nearLimit`: how many pending top-ups make an account count as near its limit. */
export async function stateGaugeRow(em: EntityManager, nearLimit: number): Promise<StateGaugeRow> {
  const [row] = await em.execute<StateGaugeRow[]>(
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
    [nearLimit],
  );
  return row;
}
