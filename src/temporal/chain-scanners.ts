import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Logger } from 'pino';
import type { TemporalHandle } from './client';
import { keepTrying } from './keep-trying';
import { chainScanStarter } from './starters';

// The worker process's part of the chain scanners (workflows/chain-scan-workflow.ts): one per
// configured chain, started if it is not running. Every worker process does this at start; the
// first one starts them and the others find them running.

export async function keepChainScanners(opts: {
  temporal: TemporalHandle;
  chainIds: readonly number[];
  logger: Logger;
  retryMs?: number;
}): Promise<() => void> {
  return keepTrying({
    attempt: async () => {
      for (const chainId of opts.chainIds) {
        try {
          await chainScanStarter(opts.temporal, chainId).start();
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }
      }
      opts.logger.info({ chains: opts.chainIds }, 'chain scanners running');
    },
    failure: 'could not start the chain scanners; trying again',
    context: { chains: opts.chainIds },
    logger: opts.logger,
    retryMs: opts.retryMs,
  });
}
