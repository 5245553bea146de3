import { condition, isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { PaymentActivities } from '../activities/payments-activities';
import type { PaymentNotice, PaymentTiming, PaymentWorkflowState } from '../src/contracts/payments';

// The provider's status endpoint: a few tries per sync tick (a failed sync is caught and the next
// tick asks again).
const provider = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5 },
});
// Postgres steps (idempotent): retried until the database answers, however long it is down, so an
// outage delays a payment's settlement or expiry but never fails the order's workflow.
const db = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export type PaymentOutcome = 'paid' | 'paid_late' | 'expired' | 'already_settled';

/** Callbacks that arrived as signals, waiting to be handled by the payment loop. */
export interface Notices {
  queue: PaymentNotice[];
}

/** A verified provider callback, queued for the payment loop; it names the order if nothing has yet. */
export function queueNotice(holder: { orderId: string | null }, notices: Notices, notice: PaymentNotice): void {
  holder.orderId ??= notice.orderId;
  notices.queue.push(notice);
}

/**
 * Waits for the payment of one hosted checkout: a verified callback (signal) settles at once; the
 * provider's status endpoint is asked at most once per sync interval; when the window closes the
 * order expires, and a payment that still arrives within the late-payment watch is settled anyway.
 */
export async function awaitPayment(orderId: string, timing: PaymentTiming, notices: Notices, state: PaymentWorkflowState): Promise<PaymentOutcome> {
  const initial = await db.paymentState(orderId);
  if (initial.status !== 'pending' && initial.status !== 'expired') return 'already_settled';
  const expiresAt = initial.expiresAt ?? Date.now();

  const settle = async (late: boolean, path: 'callback' | 'status_sync'): Promise<PaymentOutcome | undefined> => {
    const outcome = await db.settlePayment(orderId, late ? 'late' : path);
    state.status = outcome === 'settled' ? 'paid' : state.status;
    return outcome === 'settled' ? (late ? 'paid_late' : 'paid') : outcome === 'already_settled' ? 'already_settled' : undefined;
  };

  /** One wait: a callback, or the next status sync. Returns an outcome when the order is settled. */
  const waitOnce = async (waitMs: number, late: boolean): Promise<PaymentOutcome | undefined> => {
    const notified = await condition(() => notices.queue.length > 0, waitMs);
    if (notified) {
      const notice = notices.queue.shift()!;
      if (notice.status === 'paid') return settle(late, 'callback');
      return undefined;
    }
    state.syncs++;
    try {
      const status = await provider.syncPayment(orderId);
      if (status === 'paid') return settle(late, 'status_sync');
    } catch (err) {
      if (isCancellation(err)) throw err;
      // The provider's status endpoint failing is not the payment failing: try again next tick.
      state.lastSyncError = err instanceof Error ? err.message : String(err);
      log.warn('payment status sync failed', { orderId, error: state.lastSyncError });
    }
    return undefined;
  };

  if (initial.status === 'pending') {
    state.status = 'pending';
    while (Date.now() < expiresAt) {
      const outcome = await waitOnce(Math.max(1, Math.min(timing.syncSeconds * 1000, expiresAt - Date.now())), false);
      if (outcome) return outcome;
    }
    const after = await db.expirePayment(orderId);
    if (after !== 'expired') return 'already_settled';
    state.status = 'expired';
  }

  // Late payments are honoured: keep listening for the callback and asking the provider for a while.
  const watchUntil = Date.now() + timing.lateWatchSeconds * 1000;
  while (notices.queue.length > 0 || Date.now() < watchUntil) {
    const outcome = await waitOnce(Math.max(1, Math.min(timing.latePollSeconds * 1000, watchUntil - Date.now())), true);
    if (outcome) return outcome;
  }
  return 'expired';
}
