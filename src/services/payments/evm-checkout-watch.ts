import type { Config } from '../../config';
import { checkoutsToScan, evmChainScans, evmCheckoutAt, saveEvmChainScan } from '../../db/evm-store';
import type { Orm } from '../../db/orm';
import { OrderSchema } from '../../db/entities/all-entities';
import {
  evmCheckoutScannedSignal,
  evmCheckoutWorkflowId,
  type ChainScanTick,
  type SettlePhase,
} from '../../contracts/evm-checkouts-contract';
import type { TemporalHandle } from '../../temporal/client';
import type { Order } from '../../db/entities/all-entities';
import type { EvmPaymentProvider } from '../../providers/evm/provider';
import { ChainUnavailableError } from '../../providers/evm/rpc';
import { settleCheckout, type CheckoutSettlement } from './evm-checkouts';
import { addressOn, ClosingNotReadyError, rescanBeforeClosing, scanCheckoutsOn } from './evm-scan';

// The self-hosted checkout's watch (PAYMENT_PROVIDER=evm), over the EVM adapter's chain client
// (src/providers/evm/provider.ts): each chain's scanner's tick and the checkout watch's steps,
// called by their activities. Opening a checkout is ./evm-checkout-opening.ts (the API's side).

/**
 * The settle step's activity has 30 s (workflows/activity-options.ts): the rescan before closing
 * stops well within it, and its next try goes on where it stopped.
 */
const CLOSING_RESCAN_BUDGET_MS = 15_000;
/** Past its payment window, a checkout whose order never committed is no longer read (its watch has ended). */
const UNCOMMITTED_SLACK_SECONDS = 300;
/** A chain whose scanner has not ticked for this many sync periods counts as unavailable to its watches. */
const STALE_TICKS = 5;

export interface EvmCheckoutDeps {
  orm: Orm;
  config: Config;
  temporal: TemporalHandle;
  evm: EvmPaymentProvider;
  /**
   * Tells a paid order's (or top-up's) workflow, as a provider's callback would (the composition
   * root hands in src/temporal/payment-notices.ts: the worker's activities never load the starters).
   */
  notifyPaid: (order: Order) => Promise<void>;
}

export class EvmCheckoutWatch {
  constructor(private readonly deps: EvmCheckoutDeps) {}

  /**
   * One tick of the chain's scanner: every checkout not closed whose address is on the chain, read
   * at once (ceil(N / EVM_SCAN_ADDRESSES_PER_CALL) eth_getLogs per block range), then the watches
   * of those whose transfers moved are woken to count them now. With no open checkout it asks no
   * node. How it went is kept for the watches' `unavailableFor`.
   */
  async scanChain(chainId: number): Promise<ChainScanTick> {
    const { config, evm } = this.deps;
    const nextInSeconds = config.PAYMENT_SYNC_SECONDS;
    const rpc = evm.rpcs.find((r) => r.chain.chainId === chainId);
    if (!rpc) return { checkouts: 0, woken: 0, available: false, nextInSeconds, retired: true };
    const em = this.deps.orm.em.fork();
    // An uncommitted checkout is read for as long as its order could still commit and be paid.
    const open = (await checkoutsToScan(em, config.PAYMENT_WINDOW_SECONDS + UNCOMMITTED_SLACK_SECONDS)).filter((c) =>
      addressOn(c, rpc.chain),
    );
    const tick = { checkouts: open.length, woken: 0, available: true, nextInSeconds, retired: false };
    let touched = new Set<string>();
    if (open.length > 0) {
      try {
        if (!(await evm.tokensVerified(rpc))) tick.available = false;
        else touched = await scanCheckoutsOn(em, rpc, open, config.EVM_SCAN_ADDRESSES_PER_CALL);
      } catch (err) {
        if (!(err instanceof ChainUnavailableError)) throw err;
        tick.available = false;
      }
    }
    await saveEvmChainScan(em, { chainId, checkouts: open.length, available: tick.available });
    for (const checkout of open.filter((c) => touched.has(c.id)))
      if (await this.wake(checkout.reference, checkout.derivation_index)) tick.woken++;
    return tick;
  }

  /**
   * The chains this checkout's address is read on whose scanner's last tick could not read them,
   * or that have not been read for several ticks (their scanner stopped or failing).
   */
  async unavailableFor(depositIndex: number): Promise<{ unavailable: number[] }> {
    const em = this.deps.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    if (!checkout || checkout.state === 'closed') return { unavailable: [] };
    const scans = new Map((await evmChainScans(em)).map((s) => [s.chain_id, s]));
    const staleMs = STALE_TICKS * this.deps.config.PAYMENT_SYNC_SECONDS * 1000;
    const unavailable = this.deps.evm.chains.filter((chain) => {
      const scan = scans.get(chain.chainId);
      return addressOn(checkout, chain) && scan && (!scan.available || Number(scan.age_ms) > staleMs);
    });
    return { unavailable: unavailable.map((c) => c.chainId) };
  }

  /**
   * Counts what is confirmed. Before closing, the address is read again on every chain from the
   * checkout's start block; the closing step fails (and is retried) until that is done.
   */
  async settle(depositIndex: number, phase: SettlePhase): Promise<CheckoutSettlement> {
    const em = this.deps.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    if (!checkout) throw new Error(`no checkout at deposit index ${depositIndex}`);
    if (phase === 'closing' && checkout.state !== 'closed') {
      for (const rpc of this.deps.evm.rpcs) {
        if (!(await this.deps.evm.tokensVerified(rpc)))
          throw new ClosingNotReadyError(`chain ${rpc.chain.chainId}: its tokens' decimals() are not read yet`);
      }
      await rescanBeforeClosing(em, checkout, this.deps.evm.rpcs, Date.now() + CLOSING_RESCAN_BUDGET_MS);
    }
    return settleCheckout(em, checkout.id, { levelThresholds: this.deps.config.LEVEL_THRESHOLDS, phase });
  }

  /** Tells the checkout's order workflow that it was paid (signal-with-start, like a callback). */
  async notifyPaid(depositIndex: number): Promise<void> {
    const em = this.deps.orm.em.fork();
    const checkout = await evmCheckoutAt(em, depositIndex);
    const order = checkout && (await em.findOne(OrderSchema, { id: checkout.reference }));
    if (order && (order.status === 'pending' || order.status === 'expired')) await this.deps.notifyPaid(order);
  }

  /** Wakes the checkout's watch; false when it is not running (closed, or not started yet). A wake is a hint: its step comes anyway. */
  private async wake(orderId: string, depositIndex: number): Promise<boolean> {
    try {
      await this.deps.temporal.client.workflow
        .getHandle(evmCheckoutWorkflowId(orderId, depositIndex))
        .signal(evmCheckoutScannedSignal);
      return true;
    } catch {
      return false;
    }
  }
}
