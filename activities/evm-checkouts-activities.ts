import { Context, log } from '@temporalio/activity';
import type { EvmPaymentProvider } from '../src/providers/evm/provider';
import type { SettlePhase } from '../src/contracts/evm-checkouts';

// The EVM checkout watch's steps. Inputs and results are ids, states and counts: deposit
// addresses, transaction hashes and node URLs stay in Postgres and config, out of history.

export function createEvmCheckoutActivities(deps: { evm?: EvmPaymentProvider }) {
  const evm = () => {
    if (!deps.evm) throw new Error('this worker has no EVM payment provider (PAYMENT_PROVIDER is not evm)');
    return deps.evm;
  };
  return {
    /**
     * Asks every chain about the checkout's address; a chain that does not answer is named, not
     * fatal. It heartbeats while the nodes are asked, so a worker that dies mid-scan is noticed
     * within the heartbeat timeout rather than the scan's whole allowance.
     */
    async scanEvmCheckout(depositIndex: number): Promise<{ unavailable: number[] }> {
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), 1000);
      try {
        return await evm().scan(depositIndex);
      } finally {
        clearInterval(beat);
      }
    },

    /** Counts newly confirmed transfers once each; past the late watch they are credited to the balance. */
    async settleEvmCheckout(input: { depositIndex: number; phase: SettlePhase }): Promise<{ state: 'pending' | 'paid' | 'closed'; notify: boolean; waiting: number; orderId: string | null }> {
      const { state, notify, waiting, credited, orderId } = await evm().settle(input.depositIndex, input.phase);
      // The operator's line: money beyond what was asked went to a balance (ids only, no addresses).
      for (const { reason, cents } of credited) log.warn('payment beyond the checkout amount credited to the balance', { orderId, depositIndex: input.depositIndex, reason, cents });
      return { state, notify, waiting, orderId };
    },

    /** Tells the order's or top-up's workflow that its checkout was paid. */
    async notifyEvmCheckoutPaid(depositIndex: number): Promise<void> {
      await evm().notifyPaid(depositIndex);
    },
  };
}

export type EvmCheckoutActivities = ReturnType<typeof createEvmCheckoutActivities>;
