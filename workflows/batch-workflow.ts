import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { BatchActivities } from '../activities/batches-activities';
import {
  DEFAULT_CHUNKS_PER_RUN,
  type BatchWorkflowInput,
  type BatchWorkflowResult,
} from '../src/contracts/batches-contract';
import { untilPostgresAnswers } from './activity-options';
import { startProcurement } from './procurement-handoff';

// A chunk places its lines one at a time and heartbeats after each: a chunk lost with its worker
// is taken up again within seconds, from the first line with no outcome in Postgres. Placement
// refusals are line outcomes, not failures; only the database or a worker gone makes it retry.
const { placeBatchChunk } = proxyActivities<BatchActivities>({
  ...untilPostgresAnswers,
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
});
const { completeBatch } = proxyActivities<BatchActivities>(untilPostgresAnswers);

/**
 * One batch, keyed by `batch:<batchId>`: its lines placed in line order, `chunkLines` per
 * activity, as single orders sent one after another would be; a paid direct-code order is handed
 * to its procurement workflow as the order workflow hands off its own. Then the batch completes,
 * with `batch.completed`. A run continues as new after `chunksPerRun` chunks, so a batch of
 * thousands of lines never grows one history without end; history holds line numbers, counts and
 * order ids, never a code.
 */
export async function batchWorkflow(input: BatchWorkflowInput): Promise<BatchWorkflowResult> {
  const chunksPerRun = input.chunksPerRun ?? DEFAULT_CHUNKS_PER_RUN;
  let from = input.fromLine ?? 0;
  for (let chunks = 0; ; chunks++) {
    if (chunks > 0 && (chunks >= chunksPerRun || workflowInfo().continueAsNewSuggested)) {
      await continueAsNew<typeof batchWorkflow>({ ...input, fromLine: from });
    }
    const to = from + input.chunkLines;
    const chunk = await placeBatchChunk({ batchId: input.batchId, from, to });
    for (const order of chunk.handOffs) await startProcurement(order);
    from = to;
    if (from >= chunk.total) break;
  }
  return completeBatch(input.batchId);
}
