import { continueAsNew, isCancellation, log, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { EvmCheckoutActivities } from '../activities/evm-checkouts-activities';
import { fewTries } from './activity-options';
import type { ChainScanWorkflowInput } from '../src/contracts/evm-checkouts-contract';

// A tick reads the chain for every open checkout: it heartbeats while the nodes answer, and one
// that fails is not retried for long here, the next tick reads the same blocks again.
const scanner = proxyActivities<EvmCheckoutActivities>(
  fewTries('5 minutes', { heartbeatTimeout: '10 seconds', retry: { initialInterval: '2 seconds' } }),
);

/** Ticks in one run before it continues as new, so its history stays short. */
const TICKS_PER_RUN = 500;
/** The pause after a tick that failed, when the workers' cadence is not known. */
const AFTER_FAILURE_SECONDS = 10;

/**
 * One chain's scanner, keyed `chain-scan:<taskQueue>:<chainId>`: at the workers' sync cadence it
 * reads every new block range of the chain once for all open checkouts (their deposit addresses
 * in the log filter's topics[2]) and records what it finds in Postgres, where each checkout's
 * watch counts it. What a tick read is written before the next starts, so a worker that dies
 * mid-tick costs a repeated read, never a block left unread (the checkouts' scan rows only move
 * once their blocks' transfers are recorded).
 */
export async function chainScanWorkflow(input: ChainScanWorkflowInput): Promise<void> {
  for (let tick = 0; tick < TICKS_PER_RUN; tick++) {
    let pause = AFTER_FAILURE_SECONDS;
    try {
      const result = await scanner.scanEvmChain(input.chainId);
      if (result.retired) return;
      pause = result.nextInSeconds;
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('chain scan failed', {
        chainId: input.chainId,
        error: err instanceof Error ? err.message : String(err),
      });
    }
    await sleep(pause * 1000);
    if (workflowInfo().continueAsNewSuggested) break;
  }
  await continueAsNew<typeof chainScanWorkflow>(input);
}
