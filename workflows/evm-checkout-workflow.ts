import {
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { EvmCheckoutActivities } from '../activities/evm-checkouts-activities';
import { fewTries, untilPostgresAnswers } from './activity-options';
import {
  evmCheckoutScannedSignal,
  evmCheckoutStateQuery,
  type EvmCheckoutWatchState,
  type EvmCheckoutWorkflowInput,
  type SettlePhase,
} from '../src/contracts/evm-checkouts-contract';

// The step's look at the chain scanners' last ticks (Postgres only): a failed one is not retried
// here, the next step looks again.
const chain = proxyActivities<EvmCheckoutActivities>(
  fewTries('2 minutes', { heartbeatTimeout: '10 seconds', retry: { initialInterval: '2 seconds' } }),
);
// Postgres and the Temporal signal: retried until they answer, so settlement is never given up.
const always = proxyActivities<EvmCheckoutActivities>(untilPostgresAnswers);

/**
 * Watches one deposit address, keyed `checkout-watch:<orderId>:<depositIndex>`. The chains are read
 * for every open checkout at once by each chain's scanner (./chain-scan-workflow.ts), which
 * records and confirms transfers in Postgres and wakes the watch when its checkout's move. Within
 * the payment window and the late-payment watch it counts what is confirmed (when woken, and on its
 * own at the fallback cadence, then the late one): when the amount is reached it tells the order's (or
 * top-up's) workflow, as a provider's callback would, and money beyond it is credited to the
 * account's balance. After the
 * late watch the address is still watched for a while: whatever arrives then, or arrived and never
 * paid the order, is credited to the balance. A transfer still short of its confirmations keeps
 * the watch open. Closing, it counts once more, so nothing confirmed is left uncounted.
 */
export async function evmCheckoutWorkflow(input: EvmCheckoutWorkflowInput): Promise<EvmCheckoutWatchState> {
  const { depositIndex, timing } = input;
  const expiresAt = input.expiresAt ?? Date.now() + timing.windowSeconds * 1000;
  const lateUntil = input.lateUntil ?? expiresAt + timing.lateWatchSeconds * 1000;
  const watchUntil = input.watchUntil ?? lateUntil + timing.addressWatchSeconds * 1000;
  const state: EvmCheckoutWatchState = { depositIndex, state: 'pending', scans: 0, unavailable: [], lastError: null };
  setHandler(evmCheckoutStateQuery, () => state);
  // The chain's scanner recorded, confirmed or dropped one of this checkout's transfers.
  let scanned = false;
  setHandler(evmCheckoutScannedSignal, () => {
    scanned = true;
  });

  const step = async (phase: SettlePhase): Promise<{ waiting: number; orderId: string | null }> => {
    scanned = false;
    try {
      state.unavailable = (await chain.scanEvmCheckout(depositIndex)).unavailable;
      state.lastError = null;
    } catch (err) {
      if (isCancellation(err)) throw err;
      state.lastError = err instanceof Error ? err.message : String(err);
      log.warn('checkout scan failed', { depositIndex, error: state.lastError });
    }
    state.scans++;
    const settled = await always.settleEvmCheckout({ depositIndex, phase });
    state.state = settled.state;
    if (settled.notify) await always.notifyEvmCheckoutPaid(depositIndex);
    return settled;
  };

  // Past the watch, a transfer still waiting for its confirmations is waited for: it may be money.
  let waiting = 0;
  while (Date.now() < watchUntil || waiting > 0) {
    const settled = await step(Date.now() < lateUntil ? 'open' : 'after');
    waiting = settled.waiting;
    const now = Date.now();
    // An order that never committed (its placement failed after the checkout opened): nobody was
    // given this address, so there is nothing to wait for once its window is over.
    if (!settled.orderId && now >= expiresAt && waiting === 0) break;
    const cadence =
      now < expiresAt
        ? (timing.fallbackSeconds ?? timing.syncSeconds)
        : now < lateUntil
          ? timing.latePollSeconds
          : timing.addressPollSeconds;
    const next = now < expiresAt ? expiresAt : now < lateUntil ? lateUntil : watchUntil;
    // A timer like a sleep's; a signal from the scanner during the step or the wait ends it early.
    await condition(() => scanned, Math.max(1000, Math.min(cadence * 1000, next - now)));
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof evmCheckoutWorkflow>({ depositIndex, timing, expiresAt, lateUntil, watchUntil });
    }
  }
  await step('closing');
  return state;
}
