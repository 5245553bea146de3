// The batch lifecycle's shared contract: its workflow id, input and what its steps report.
// Workflow-safe (no Node modules). Steps carry ids and counts: the lines, their outcomes and the
// orders' codes stay in Postgres, so no history holds a code.

/** The most lines one batch may hold. */
export const MAX_BATCH_LINES = 5000;

/** One workflow per batch, named by our id. */
export const batchWorkflowId = (batchId: string) => `batch:${batchId}`;

export interface BatchWorkflowInput {
  batchId: string;
  /** Lines placed per activity (BATCH_CHUNK_LINES). */
  chunkLines: number;
  /** The first line (0-based) this run places; a run continued as new goes on from here. */
  fromLine?: number;
  /** Chunks per run before it continues as new (bounded history); DEFAULT_CHUNKS_PER_RUN when unset. */
  chunksPerRun?: number;
}

export const DEFAULT_CHUNKS_PER_RUN = 10;

/** A paid direct-code order a chunk placed: its procurement is handed off as the order workflow would. */
export interface BatchHandOff {
  orderId: string;
  accountId: string;
  externalOrderId: string;
}

export interface BatchChunkResult {
  /** Lines of the batch in all. */
  total: number;
  /** Lines with an outcome after this chunk. */
  decided: number;
  handOffs: BatchHandOff[];
}

export interface BatchWorkflowResult {
  batchId: string;
  total: number;
  placed: number;
  rejected: number;
}
