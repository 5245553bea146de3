import type { EntityManager } from '@mikro-orm/postgresql';
import { EVENTS_CHANNEL } from './events-store';

// Products changed and not yet announced (product_update_marks), and the product.updated events
// that announce them to the endpoints that asked for them.

/**
 * Marks a product as changing, in the transaction of the change, with its state before it. A
 * product already marked keeps its first state (changes within the window are one announcement);
 * a mark being announced right now is waited for, so a change is never folded into an
 * announcement that did not see it.
 */
export async function markProductChanged(em: EntityManager, productId: string, before: unknown): Promise<void> {
  await em.execute(
    `insert into product_update_marks (product_id, before) values (?, ?::jsonb)
     on conflict (product_id) do update set changes = product_update_marks.changes + 1`,
    [productId, JSON.stringify(before)],
  );
}

/** Marks whose first change is at least `windowSeconds` old, locked for the caller's transaction (others' skipped). */
export async function claimDueMarks(em: EntityManager, windowSeconds: number, limit: number) {
  return em.execute<{ product_id: string; before: unknown }[]>(
    `select product_id, before from product_update_marks
      where changed_at <= now() - make_interval(secs => ?)
      order by changed_at limit ? for update skip locked`,
    [windowSeconds, limit],
  );
}

export async function deleteMark(em: EntityManager, productId: string): Promise<void> {
  await em.execute('delete from product_update_marks where product_id = ?', [productId]);
}

/**
 * One product.updated event (with its notification) for each account at `level` whose endpoint
 * names product.updated. Returns how many were written.
 */
export async function insertProductUpdatedEvents(
  em: EntityManager,
  level: number,
  payload: Record<string, unknown>,
): Promise<number> {
  const rows = await em.execute<{ id: string }[]>(
    `with inserted as (
       insert into events (id, account_id, type, payload)
       select 'evt_' || replace(gen_random_uuid()::text, '-', ''), w.account_id, 'product.updated', ?::jsonb
         from webhook_endpoints w join accounts a on a.id = w.account_id
        where 'product.updated' = any (w.events) and a.level = ?
       returning id)
     select id, pg_notify('${EVENTS_CHANNEL}', id) from inserted`,
    [JSON.stringify(payload), level],
  );
  return rows.length;
}
