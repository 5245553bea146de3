// The events the service sends (spec part 6, the answers to a reseller's own export and batch
// requests, and the opt-in ones), and which an endpoint gets. An endpoint with no list of its own
// gets every event but the opt-in ones, so an integration made before lists existed sees nothing
// new: export.ready and batch.completed go only to accounts that make exports or batches. An
// endpoint with a list gets what it names alone; `webhook.test` goes out when asked for, whatever
// the list says.

export const EVENT_TYPES = [
  'order.delivered',
  'order.delivery_attention',
  'topup.credited',
  'redemption.fulfilled',
  'redemption.failed',
  'webhook.test',
  'export.ready',
  'batch.completed',
  'product.updated',
  'balance.low',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Sent only to endpoints whose list names them. */
export const OPT_IN_EVENTS: readonly EventType[] = ['product.updated', 'balance.low'];

/** What an endpoint's list may name. */
export const SUBSCRIBABLE_EVENTS = EVENT_TYPES.filter((t) => t !== 'webhook.test') as Exclude<
  EventType,
  'webhook.test'
>[];

/** What an endpoint without a list of its own gets from the outbox. */
export const DEFAULT_EVENTS = SUBSCRIBABLE_EVENTS.filter((t) => !OPT_IN_EVENTS.includes(t));
