import type { EntityManager } from '@mikro-orm/postgresql';
import { evmCheckoutCounts } from '../db/evm-store';
import { stateGaugeRow } from '../db/metrics-store';
import { openLedgerAlerts } from '../db/reconcile-store';
import {
  accountsNearTopupLimit,
  evmCheckouts,
  oldestNeedsAttentionSeconds,
  oldestUndeliveredEventSeconds,
  ordersNeedingAttention,
  pendingIntentOrders,
  pendingTopups,
  reconcilerLedgerMismatches,
  undeliveredWebhooks,
} from './registry';

/**
 * Sets the gauges whose truth is in Postgres, just before a scrape: one query, so the numbers
 * are one consistent reading, and no process has to keep them up to date by hand.
 */
export async function readStateGauges(em: EntityManager, maxPendingTopups: number): Promise<void> {
  const row = await stateGaugeRow(em, Math.max(1, maxPendingTopups - 1));
  ordersNeedingAttention.set(Number(row.attention));
  oldestNeedsAttentionSeconds.set(Math.max(0, Number(row.attention_age ?? 0)));
  pendingIntentOrders.set(Number(row.intent));
  pendingTopups.set(Number(row.topups));
  accountsNearTopupLimit.set(Number(row.near_limit));
  undeliveredWebhooks.set(Number(row.pending_deliveries));
  oldestUndeliveredEventSeconds.set(Math.max(0, Number(row.oldest_event_age ?? 0)));
  const checkouts = new Map((await evmCheckoutCounts(em)).map((r) => [r.state, Number(r.n)]));
  for (const state of ['pending', 'paid', 'closed']) evmCheckouts.set({ state }, checkouts.get(state) ?? 0);
  reconcilerLedgerMismatches.set(await openLedgerAlerts(em));
}
