// The EVM checkout watch's shared, workflow-safe contract: its id, input and state.
import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * `checkout-watch:<orderId>:<depositIndex>`: one watch per deposit address. Workflow ids are plain
 * text in Temporal, so the watch is named by the order and the address's derivation index, never by
 * the checkout id (whoever has that has the checkout's URL) or the address.
 */
export const evmCheckoutWorkflowId = (orderId: string, depositIndex: number) =>
  `checkout-watch:${orderId}:${depositIndex}`;

export interface EvmCheckoutTiming {
  /** How often the chains' scanners read them (PAYMENT_SYNC_SECONDS). */
  syncSeconds: number;
  /**
   * How often the watch counts on its own while the checkout can be paid, the scanners waking it
   * whenever its transfers move (EVM_WATCH_FALLBACK_SECONDS). Absent in runs started before it:
   * they count at syncSeconds.
   */
  fallbackSeconds?: number;
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

/**
 * Sent by the chain's scanner when it recorded, confirmed or dropped a transfer of the watch's
 * checkout: settle now rather than at the next step. It carries nothing, so a forged one can only
 * make the watch read Postgres sooner; what counts is what the scanner wrote there.
 */
export const evmCheckoutScannedSignal = defineSignal('evmCheckoutScanned');

/**
 * `chain-scan:<taskQueue>:<chainId>`: one scanner per chain and deployment, started by the worker
 * processes (each keeps the running one) and continued as new.
 */
export const chainScanWorkflowId = (taskQueue: string, chainId: number) => `chain-scan:${taskQueue}:${chainId}`;

export interface ChainScanWorkflowInput {
  chainId: number;
}

/** One tick of a chain's scanner, as its workflow sees it: counts only, no address or hash. */
export interface ChainScanTick {
  /** The checkouts read for (their addresses in the chain's filters). */
  checkouts: number;
  /** Watches told that their checkout's transfers moved. */
  woken: number;
  /** False when no node answered, or the tokens' decimals() are not read yet. */
  available: boolean;
  /** When to read again (the workers' PAYMENT_SYNC_SECONDS). */
  nextInSeconds: number;
  /** The chain is no longer configured: the scanner ends. */
  retired: boolean;
}
