// The EVM checkout watch's shared, workflow-safe contract: its id, input and state.
import { defineQuery } from '@temporalio/workflow';

/**
 * `checkout-watch:<orderId>:<depositIndex>`: one watch per deposit address. Workflow ids are plain
 * text in Temporal, so the watch is named by the order and the address's derivation index, never by
 * the checkout id (whoever has that has the checkout's URL) or the address.
 */
export const evmCheckoutWorkflowId = (orderId: string, depositIndex: number) => `checkout-watch:${orderId}:${depositIndex}`;

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
  /** The deposit address's derivation index, which names its checkout in Postgres. */
  depositIndex: number;
  timing: EvmCheckoutTiming;
  /** Set by the first run and carried across continue-as-new (ms since the epoch). */
  expiresAt?: number;
  lateUntil?: number;
  watchUntil?: number;
}

export interface EvmCheckoutWatchState {
  depositIndex: number;
  state: 'pending' | 'paid' | 'closed';
  scans: number;
  /** Chain ids whose nodes did not answer at the last scan. */
  unavailable: number[];
  lastError: string | null;
}

export const evmCheckoutStateQuery = defineQuery<EvmCheckoutWatchState>('evmCheckoutState');
