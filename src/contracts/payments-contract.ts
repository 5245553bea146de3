// The payment loop's shared, workflow-safe contract: what intent orders and top-ups (./topups)
// both wait on while a hosted checkout is open.
import { defineSignal } from '@temporalio/workflow';

/** Durations from config, passed in at start because workflows cannot read the environment. */
export interface PaymentTiming {
  syncSeconds: number;
  lateWatchSeconds: number;
  latePollSeconds: number;
  /** Absent in workflows started before it existed. */
  placementRecoverySeconds?: number;
}

/**
 * A verified provider callback: the payment (or abandonment) of the order's checkout. `follow`
 * confirms nothing: the reconciler sends it to name the order to a new run, which then takes up
 * its payment window (status sync, expiry, late payment) as the lost run would have.
 */
export interface PaymentNotice {
  orderId: string;
  status: 'paid' | 'abandoned' | 'follow';
}

export const paymentNotifiedSignal = defineSignal<[PaymentNotice]>('paymentNotified');

export interface PaymentWorkflowState {
  orderId: string | null;
  status: string;
  syncs: number;
  lastSyncError: string | null;
}
