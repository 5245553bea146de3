import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../domain/codes';

export type EventType =
  | 'order.delivered'
  | 'order.delivery_attention'
  | 'topup.credited'
  | 'redemption.fulfilled'
  | 'redemption.failed'
  | 'webhook.test';

/** NOTIFY channel that wakes the webhook dispatcher when an event commits (payload: the event id). */
export const EVENTS_CHANNEL = 'wholesale_events';

/**
 * Writes an event to the outbox in the caller's transaction. `id` is given for events whose id
 * shape the spec fixes (order.delivery_attention, redemption events); others get `evt_...`.
 * Returns the id, or undefined when an event with that id already exists.
 */
export async function recordEvent(
  em: EntityManager,
  accountId: string,
  type: EventType,
  payload: Record<string, unknown>,
  id: string = newId('evt'),
): Promise<string | undefined> {
  // The notification is delivered on commit, so the dispatcher never sees an event its
  // transaction rolled back; it is sent only when the row is new (one round trip for both).
  const rows = await em.execute<{ id: string }[]>(
    `with inserted as (
       insert into events (id, account_id, type, payload) values (?, ?, ?, ?::jsonb)
       on conflict (id) do nothing returning id)
     select id, pg_notify('${EVENTS_CHANNEL}', id) from inserted`,
    [id, accountId, type, JSON.stringify(payload)],
  );
  return rows[0]?.id;
}
