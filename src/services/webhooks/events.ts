import type { EntityManager } from '@mikro-orm/postgresql';
import { insertEvent } from '../../db/events-store';
import { newId } from '../../codes';
import type { EventType } from '../../domain/event-types';

export type { EventType };

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
  return insertEvent(em, id, accountId, type, payload);
}
