// The EVM checkout watch's shared, workflow-safe contract: its id, input and state.
import { defineQuery } from '@temporalio/workflow';

/** `checkout-watch:<checkoutId>`: one watch per deposit address. */
export const evmCheckoutWorkflowId = (checkoutId: string) => `checkout-watch:${checkoutId}`;

export interface EvmCheckoutTiming {
  /** How often the chains are asked while the checkout can be paid (PAYMENT_SYNC_SECONDS). */
  syncSeconds: number;
  /** The payment window (PAYMENT_WINDOW_SECONDS), then the late watch and its cadence. */
  windowSeconds: number;
  lateWatchSeconds: number;
  latePollSeconds: number;
  /** After the late watch: the address is still watched, and what arrives is credited to the balance. */
  addressWatchSeconds: number;
  addressPollSeconds: number;
}

/** How a settlement treats money that reaches the amount: `open` pays the order, `after` credits the balance. */
export type SettlePhase = 'open' | 'after' | 'closing';

export interface EvmCheckoutWorkflowInput {
  checkoutId: string;
  timing: EvmCheckoutTiming;
  /** Set by the first run and carried across continue-as-new (ms since the epoch). */
  expiresAt?: number;
  lateUntil?: number;
  watchUntil?: number;
}

export interface EvmCheckoutWatchState {
  checkoutId: string;
  state: 'pending' | 'paid' | 'closed';
  scans: number;
  /** Chain ids whose nodes did not answer at the last scan. */
  unavailable: number[];
  lastError: string | null;
}

export const evmCheckoutStateQuery = defineQuery<EvmCheckoutWatchState>('evmCheckoutState');
