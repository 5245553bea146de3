import { Context, log } from '@temporalio/activity';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import type { EvmPaymentProvider } from '../src/providers/evm/provider';
import { EvmCheckoutWatch, type EvmCheckoutDeps } from '../src/services/payments/evm-checkout-watch';
import type { TemporalHandle } from '../src/temporal/client';
import type { ChainScanTick, SettlePhase } from '../src/contracts/evm-checkouts-contract';

// The EVM checkout watch's steps. Inputs and results are ids, states and counts: deposit
// addresses, transaction hashes and node URLs stay in Postgres and config, out of history.

export function createEvmCheckoutActivities(deps: {
  orm: Orm;
  config: Config;
  temporal?: TemporalHandle;
  evm?: EvmPaymentProvider;
  notifyPaid?: EvmCheckoutDeps['notifyPaid'];
}) {
  const { orm, config, temporal, evm: chains, notifyPaid } = deps;
  const watch =
    chains && temporal && notifyPaid
      ? new EvmCheckoutWatch({ orm, config, temporal, evm: chains, notifyPaid })
      : undefined;
  const evm = () => {
    if (!watch) throw new Error('this worker has no EVM payment provider (PAYMENT_PROVIDER is not evm)');
    return watch;
  };
  return {
    /**
     * The chain scanner's tick: the chain read once for every open checkout, what it shows
     * recorded and confirmed, and the watches of the checkouts whose transfers moved woken. It
     * heartbeats while the nodes are asked, so a worker that dies mid-tick is noticed within the
     * heartbeat timeout rather than the tick's whole allowance.
     */
    async scanEvmChain(chainId: number): Promise<ChainScanTick> {
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), 1000);
      try {
        return await evm().scanChain(chainId);
      } finally {
        clearInterval(beat);
      }
    },

    /**
     * The chains the checkout's address is read on whose scanner could not read them at its last
     * tick (no node answered, the tokens' decimals() unread), from Postgres: the watch no longer
     * asks a node itself.
     */
    async scanEvmCheckout(depositIndex: number): Promise<{ unavailable: number[] }> {
      return evm().unavailableFor(depositIndex);
    },

    /** Counts newly confirmed transfers once each; past the late watch they are credited to the balance. */
    async settleEvmCheckout(input: {
      depositIndex: number;
      phase: SettlePhase;
    }): Promise<{ state: 'pending' | 'paid' | 'closed'; notify: boolean; waiting: number; orderId: string | null }> {
      const { state, notify, waiting, credited, orderId } = await evm().settle(input.depositIndex, input.phase);
      // The operator's line: money beyond what was asked went to a balance (ids only, no addresses).
      for (const { reason, cents } of credited)
        log.warn('payment beyond the checkout amount credited to the balance', {
          orderId,
          depositIndex: input.depositIndex,
          reason,
          cents,
        });
      return { state, notify, waiting, orderId };
    },

    /** Tells the order's or top-up's workflow that its checkout was paid. */
    async notifyEvmCheckoutPaid(depositIndex: number): Promise<void> {
      await evm().notifyPaid(depositIndex);
    },
  };
}

export type EvmCheckoutActivities = ReturnType<typeof createEvmCheckoutActivities>;
