// Every duration a workflow runs by, read from config in one place. Workflows cannot read the
// environment (and must not: a replay would see today's values), so the starters (./starters)
// hand these to each run as input and the workflows stay config-free. Procurement is the one
// lifecycle whose usual start is a child of the order workflow, with no config at hand: its
// bounds reach it through its first activity (beginProcurement), recorded in its history.
// The field names are part of recorded histories: keep them.
import type { Config } from '../config';
import type { PaymentTiming } from '../contracts/payments-contract';
import type { ProcurementTiming } from '../contracts/procurement-contract';
import type { RedemptionWorkflowInput } from '../contracts/redemptions-contract';
import type { DeliveryWorkflowInput } from '../contracts/webhooks-contract';
import type { EvmCheckoutTiming } from '../contracts/evm-checkouts-contract';

/** The settings the durations come from (the whole Config satisfies it). */
export type TimingConfig = Pick<
  Config,
  | 'PAYMENT_SYNC_SECONDS'
  | 'PAYMENT_WINDOW_SECONDS'
  | 'EVM_ADDRESS_WATCH_SECONDS'
  | 'EVM_ADDRESS_POLL_SECONDS'
  | 'EVM_WATCH_FALLBACK_SECONDS'
  | 'LATE_PAYMENT_WATCH_SECONDS'
  | 'LATE_PAYMENT_POLL_SECONDS'
  | 'PLACEMENT_RECOVERY_SECONDS'
  | 'PROCUREMENT_RETRY_BASE_SECONDS'
  | 'PROCUREMENT_RETRY_CAP_SECONDS'
  | 'PROCUREMENT_MAX_ROUNDS'
  | 'PROCUREMENT_DEADLINE_SECONDS'
  | 'REDEMPTION_REFRESH_SECONDS'
  | 'WEBHOOK_MAX_ATTEMPTS'
  | 'WEBHOOK_RETRY_BASE_SECONDS'
  | 'WEBHOOK_RETRY_CAP_SECONDS'
  | 'WEBHOOK_TIMEOUT_MS'
>;

/** The payment loop of intent orders and top-ups: provider sync cadence, late-payment watch, placement recovery. */
export function paymentTiming(c: TimingConfig): Required<PaymentTiming> {
  return {
    syncSeconds: c.PAYMENT_SYNC_SECONDS,
    lateWatchSeconds: c.LATE_PAYMENT_WATCH_SECONDS,
    latePollSeconds: c.LATE_PAYMENT_POLL_SECONDS,
    placementRecoverySeconds: c.PLACEMENT_RECOVERY_SECONDS,
  };
}

/** An EVM checkout's watch: woken by the scanners, counting on its own at the fallback cadence in the window, then at the late one. */
export function evmCheckoutTiming(c: TimingConfig): EvmCheckoutTiming {
  return {
    syncSeconds: c.PAYMENT_SYNC_SECONDS,
    fallbackSeconds: Math.max(c.EVM_WATCH_FALLBACK_SECONDS, c.PAYMENT_SYNC_SECONDS),
    windowSeconds: c.PAYMENT_WINDOW_SECONDS,
    lateWatchSeconds: c.LATE_PAYMENT_WATCH_SECONDS,
    latePollSeconds: c.LATE_PAYMENT_POLL_SECONDS,
    addressWatchSeconds: c.EVM_ADDRESS_WATCH_SECONDS,
    addressPollSeconds: c.EVM_ADDRESS_POLL_SECONDS,
  };
}

/** Supplier backoff and the bounds of one procurement attempt before needs_attention. */
export function procurementTiming(c: TimingConfig): ProcurementTiming {
  return {
    retryBaseSeconds: c.PROCUREMENT_RETRY_BASE_SECONDS,
    retryCapSeconds: c.PROCUREMENT_RETRY_CAP_SECONDS,
    maxRounds: c.PROCUREMENT_MAX_ROUNDS,
    deadlineSeconds: c.PROCUREMENT_DEADLINE_SECONDS,
  };
}

/** How often a redemption attempt refreshes the upstream's status (spec 8). */
export function redemptionTiming(c: TimingConfig): Pick<RedemptionWorkflowInput, 'refreshSeconds'> {
  return { refreshSeconds: c.REDEMPTION_REFRESH_SECONDS };
}

/** A webhook delivery's attempt budget, backoff and receiver deadline. */
export function deliveryTiming(c: TimingConfig): Omit<DeliveryWorkflowInput, 'deliveryId'> {
  return {
    maxAttempts: c.WEBHOOK_MAX_ATTEMPTS,
    retryBaseSeconds: c.WEBHOOK_RETRY_BASE_SECONDS,
    retryCapSeconds: c.WEBHOOK_RETRY_CAP_SECONDS,
    timeoutMs: c.WEBHOOK_TIMEOUT_MS,
  };
}
