import type { EndpointRow } from '../../db/webhooks-store';
import { ApiError } from '../../domain/errors';
import { DEFAULT_EVENTS, SUBSCRIBABLE_EVENTS } from '../../domain/event-types';
import { fromDb, parseDecimal, toDecimal } from '../../domain/money';

// Which events an endpoint receives, and the balance under which it hears `balance.low`. An
// endpoint without a list of its own receives the default events (every event but the opt-in
// ones), and its answers say nothing of lists: an integration made before lists sees nothing new.

export interface Subscription {
  /** Null: the default events. */
  events: string[] | null;
  /** Decimal string; set exactly when `balance.low` is in `events`. */
  balanceLowThreshold: string | null;
}

export interface SubscriptionChange {
  /** Replaces the list; absent: the list is kept (a new endpoint gets the default). */
  events?: string[];
  /** Absent: kept while the list still names balance.low. */
  balanceLowThreshold?: string | null;
}

export const subscriptionOf = (
  row: Pick<EndpointRow, 'events' | 'balance_low_threshold'> | undefined,
): Subscription => ({
  events: row?.events ?? null,
  balanceLowThreshold: row?.balance_low_threshold == null ? null : toDecimal(fromDb(row.balance_low_threshold)),
});

/**
 * What the endpoint receives after a change: the list in catalog order without repeats (the
 * default list, named in full, is the same as none), and a threshold that goes with balance.low
 * and only with it.
 */
export function resolveSubscription(current: Subscription, change: SubscriptionChange): Subscription {
  let events = current.events;
  if (change.events !== undefined) {
    const named = SUBSCRIBABLE_EVENTS.filter((t) => change.events!.includes(t));
    const isDefault = named.length === DEFAULT_EVENTS.length && DEFAULT_EVENTS.every((t) => named.includes(t));
    events = isDefault ? null : named;
  }
  const low = events?.includes('balance.low') ?? false;
  if (!low) {
    if (change.balanceLowThreshold != null) {
      throw new ApiError(
        'invalid_input',
        'balanceLowThreshold goes with the balance.low event: add balance.low to events',
        { field: 'balanceLowThreshold' },
      );
    }
    return { events, balanceLowThreshold: null };
  }
  const threshold = change.balanceLowThreshold !== undefined ? change.balanceLowThreshold : current.balanceLowThreshold;
  if (threshold === null || parseDecimal(threshold) === 0) {
    throw new ApiError(
      'invalid_input',
      'balance.low needs balanceLowThreshold: the balance, above zero, under which to be told',
      { field: 'balanceLowThreshold' },
    );
  }
  return { events, balanceLowThreshold: toDecimal(parseDecimal(threshold)) };
}

/** The answer's part about events: only for an endpoint with a list of its own. */
export function subscriptionFields(s: Subscription): { events?: string[]; balanceLowThreshold?: string } {
  if (!s.events) return {};
  return { events: s.events, ...(s.balanceLowThreshold ? { balanceLowThreshold: s.balanceLowThreshold } : {}) };
}
