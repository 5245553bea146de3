import { Context } from '@temporalio/activity';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import type { BatchChunkResult, BatchWorkflowResult } from '../src/contracts/batches-contract';
import { completeBatch, placeChunk } from '../src/services/orders/batch-placement';

/** The batch workflow's steps: ids and counts in, ids and counts out (the lines are in Postgres). */
export function createBatchActivities(deps: { orm: Orm; config: Config }) {
  const settings = { levelThresholds: deps.config.LEVEL_THRESHOLDS, publicBaseUrl: deps.config.publicBaseUrl };
  return {
    /** The lines of [from, to) with no outcome yet, placed in line order; a heartbeat after each. */
    async placeBatchChunk(chunk: { batchId: string; from: number; to: number }): Promise<BatchChunkResult> {
      const context = Context.current();
      // A placement waiting on the account's row lock still beats, so a slow line is never taken for a lost worker.
      const beat = setInterval(() => context.heartbeat(), 1000);
      try {
        return await placeChunk(deps.orm.em.fork(), chunk.batchId, chunk, settings);
      } finally {
        clearInterval(beat);
      }
    },

    async completeBatch(batchId: string): Promise<BatchWorkflowResult> {
      return completeBatch(deps.orm.em.fork(), batchId);
    },
  };
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;
