import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client as PgClient } from 'pg';
import { OPT_IN_EVENTS } from '../domain/event-types';

// The events outbox: producers insert in their own transaction, the dispatcher relays.

/** NOTIFY channel that wakes the webhook dispatcher when an event commits (payload: the event id). */
export const EVENTS_CHANNEL = 'wholesale_events';

/**
 * Inserts an event in the caller's transaction; returns its id, or undefined when an event with
 * that id already exists. The notification is delivered on commit, so the dispatcher never sees
 * an event its transaction rolled back; it is sent only when the row is new (one round trip for both).
 */
export async function insertEvent(
  em: EntityManager,
  id: string,
  accountId: string,
  type: string,
  payload: Record<string, unknown>,
): Promise<string | undefined> {
  const rows = await em.execute<{ id: string }[]>(
    `with inserted as (
       insert into events (id, account_id, type, payload) values (?, ?, ?, ?::jsonb)
       on conflict (id) do nothing returning id)
     select id, pg_notify('${EVENTS_CHANNEL}', id) from inserted`,
    [id, accountId, type, JSON.stringify(payload)],
  );
  return rows[0]?.id;
}

/** Subscribes a dedicated connection to the outbox's notifications. */
export async function listenForEvents(client: PgClient): Promise<void> {
  await client.query(`listen ${EVENTS_CHANNEL}`);
}

// Code constants, not input: the opt-in event names are written into the statement.
const OPT_IN_LIST = OPT_IN_EVENTS.map((t) => `'${t}'`).join(', ');

/**
 * Claims up to `limit` undispatched events, oldest first, for the caller's transaction (rows
 * another relay holds are skipped), each with whether its account has a webhook that receives it:
 * one whose list names it, or one without a list and an event that is not opt-in.
 */
export async function claimUndispatchedEvents(em: EntityManager, limit: number) {
  return em.execute<{ id: string; account_id: string; configured: boolean }[]>(
    `select e.id, e.account_id,
            exists (select 1 from webhook_endpoints w
                     where w.account_id = e.account_id
                       and (case when w.events is null then e.type not in (${OPT_IN_LIST}) else e.type = any (w.events) end)) as configured
       from events e where e.dispatched_at is null
      order by e.created_at, e.id limit ? for update of e skip locked`,
    [limit],
  );
}

export async function markEventDispatched(em: EntityManager, eventId: string): Promise<void> {
  await em.execute('update events set dispatched_at = now() where id = ?', [eventId]);
}

export async function markEventsDispatched(em: EntityManager, eventIds: string[]): Promise<void> {
  await em.execute('update events set dispatched_at = now() where id in (?)', [eventIds]);
}
