import {
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { PaymentActivities } from '../activities/payments-activities';
import {
  paymentNotifiedSignal,
  type PaymentNotice,
  type PaymentTiming,
  type PaymentWorkflowState,
} from '../src/contracts/payments-contract';
import { fewTries, untilPostgresAnswers } from './activity-options';
import { awaitPlacement, latePlacementPatch, placeExclusively } from './placement';

// The provider's status endpoint: a few tries per sync tick (a failed sync is caught and the next
// tick asks again).
const provider = proxyActivities<PaymentActivities>(fewTries('30 seconds', { retry: { maximumAttempts: 5 } }));
// Postgres steps (idempotent): retried until the database answers, however long it is down, so an
// outage delays a payment's settlement or expiry but never fails the order's workflow.
const db = proxyActivities<PaymentActivities>(untilPostgresAnswers);

export type PaymentOutcome = 'paid' | 'paid_late' | 'expired' | 'already_settled';

/** Callbacks that arrived as signals, waiting to be handled by the payment loop. */
export interface Notices {
  queue: PaymentNotice[];
}

/** A verified provider callback, queued for the payment loop; it names the order if nothing has yet. */
function queueNotice(holder: { orderId: string | null }, notices: Notices, notice: PaymentNotice): void {
  holder.orderId ??= notice.orderId;
  notices.queue.push(notice);
}

/**
 * Waits for the payment of one hosted checkout: a verified callback (signal) settles at once; the
 * provider's status endpoint is asked at most once per sync interval; when the window closes the
 * order expires, and a payment that still arrives within the late-payment watch is settled anyway.
 */
export async function awaitPayment(
  orderId: string,
  timing: PaymentTiming,
  notices: Notices,
  state: PaymentWorkflowState,
): Promise<PaymentOutcome> {
  const initial = await db.paymentState(orderId);
  if (initial.status !== 'pending' && initial.status !== 'expired') return 'already_settled';
  const expiresAt = initial.expiresAt ?? Date.now();

  const settle = async (late: boolean, path: 'callback' | 'status_sync'): Promise<PaymentOutcome | undefined> => {
    const outcome = await db.settlePayment(orderId, late ? 'late' : path);
    state.status = outcome === 'settled' ? 'paid' : state.status;
    return outcome === 'settled'
      ? late
        ? 'paid_late'
        : 'paid'
      : outcome === 'already_settled'
        ? 'already_settled'
        : undefined;
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

/**
 * What an order and a top-up have in common: an update places it (one at a time, under a mutex),
 * the run waits for that answer or finds it in Postgres, then follows it (its payment, and what a
 * subclass adds); a placement that answers after the run had settled for none is followed too.
 * Each subclass registers its own handlers and says where its id and counters live.
 */
export abstract class PaymentLifecycle {
  protected readonly notices: Notices = { queue: [] };
  /**
   * Placements that arrive together wait their turn (a flag checked by `condition` let them all
   * through, since every waiting condition is checked in one pass).
   */
  protected readonly turns = new Mutex();
  /** The subject `follow` set out with (null: the run had settled for none). */
  private followed: string | null = null;

  /** The order or top-up this run placed or found (null: none yet). */
  protected abstract subjectId(): string | null;
  /** Placements tried so far, answered or failed. */
  protected abstract tries(): number;
  protected abstract countTry(): void;
  /** What follows the answer: the payment window, expiry, late payment, and the subclass's next step. */
  protected abstract followSubject(): Promise<void>;

  abstract register(): void;
  abstract awaitAnswer(): Promise<void>;

  /** Payment callbacks (signals) are queued for the payment loop; the first names the subject. */
  protected queueNotices(holder: { orderId: string | null }): void {
    setHandler(paymentNotifiedSignal, (notice) => queueNotice(holder, this.notices, notice));
  }

  /** One placement at a time; a failure becomes the update's failure, never the workflow's. */
  protected exclusive<T>(place: () => Promise<T>, failed?: (err: unknown) => void): Promise<T> {
    return placeExclusively(this.turns, place, { failed, tried: () => this.countTry() });
  }

  /** Until a placement answered, or (with recovery on) `recover` found the subject in Postgres. */
  protected awaitPlaced(opts: {
    recoverAfterSeconds: number | undefined;
    recover: () => Promise<void>;
    inFlightPatched?: boolean;
  }): Promise<void> {
    return awaitPlacement({
      answered: () =>
        this.subjectId() !== null || (this.tries() > 0 && !this.turns.isLocked() && allHandlersFinished()),
      inFlight: () => this.turns.isLocked(),
      ...opts,
    });
  }

  /**
   * The subject this run settled on (or none) to its end, and every handler finished. A
   * placement can answer only then: one that arrived while the recovery was asking Postgres, and
   * wrote after Postgres answered "none" (see answeredLate).
   */
  async follow(): Promise<void> {
    this.followed = this.subjectId();
    await this.followSubject();
    await condition(allHandlersFinished);
  }

  /** A placement answered after the run had settled for none: it is followed too. */
  answeredLate(): boolean {
    return this.subjectId() !== null && this.followed === null;
  }
}

/** A payment lifecycle's run: register, await the placement, follow it, and a late one too. */
export async function runPaymentLifecycle(lifecycle: PaymentLifecycle): Promise<void> {
  lifecycle.register();
  await lifecycle.awaitAnswer();
  await lifecycle.follow();
  if (lifecycle.answeredLate() && patched(latePlacementPatch)) await lifecycle.follow();
}
