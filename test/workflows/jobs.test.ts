import { batchWorkflowId, type BatchChunkResult } from '../../src/contracts/batches-contract';
import { exportWorkflowId, type ExportProgress } from '../../src/contracts/exports-contract';
import { procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { uniqueId, workflowEnv, type WorkflowEnv } from './env';

// exportWorkflow and batchWorkflow with stubbed steps: pages until written, then ready, a wait for
// the link's life and the file's deletion; a run bounded in pages or chunks continues as new where
// it stands; a batch's chunks in order, a paid gift card handed to its procurement workflow, and
// the batch completed once every line is decided. Postgres' answers are the stubs'.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const progress = (over: Partial<ExportProgress>): ExportProgress => ({
  status: 'running',
  rows: 0,
  pages: 0,
  written: false,
  expiresAt: null,
  ...over,
});

test.concurrent(
  'an export writes page after page in runs of two pages, is made ready, waits out its link and deletes its file',
  async () => {
    const tq = env.taskQueue();
    const exportId = uniqueId('exp');
    let pages = 0;
    const writeExportPage = jest.fn(async () => {
      pages++;
      return progress({ rows: pages * 10, pages, written: pages === 5 });
    });
    const finishExport = jest.fn(async () =>
      progress({ status: 'ready', rows: 50, pages: 5, written: true, expiresAt: Date.now() + 1500 }),
    );
    const expireExport = jest.fn(async () => undefined);
    await env.withWorker(tq, { writeExportPage, finishExport, expireExport }, async () => {
      const handle = await env.client.workflow.start('exportWorkflow', {
        workflowId: exportWorkflowId(exportId),
        taskQueue: tq,
        args: [{ exportId, pagesPerRun: 2 }],
      });
      expect(await handle.result()).toEqual(
        progress({ status: 'expired', rows: 50, pages: 5, written: true, expiresAt: expect.any(Number) }),
      );
      expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);
    });
    expect(writeExportPage).toHaveBeenCalledTimes(5);
    expect(finishExport.mock.calls).toEqual([[exportId]]);
    expect(expireExport.mock.calls).toEqual([[exportId]]);
  },
);

test.concurrent(
  'a run started again for an export already ready writes nothing and only waits for its link to expire',
  async () => {
    const tq = env.taskQueue();
    const exportId = uniqueId('exp');
    const writeExportPage = jest.fn(async () =>
      progress({ status: 'ready', rows: 7, pages: 1, written: true, expiresAt: Date.now() + 500 }),
    );
    const finishExport = jest.fn();
    const expireExport = jest.fn(async () => undefined);
    await env.withWorker(tq, { writeExportPage, finishExport, expireExport }, async () => {
      const handle = await env.client.workflow.start('exportWorkflow', {
        workflowId: exportWorkflowId(exportId),
        taskQueue: tq,
        args: [{ exportId }],
      });
      expect((await handle.result()).status).toBe('expired');
    });
    expect(writeExportPage).toHaveBeenCalledTimes(1);
    expect(finishExport).not.toHaveBeenCalled();
    expect(expireExport).toHaveBeenCalledTimes(1);
  },
);

test.concurrent(
  'a batch places its chunks in order across runs, hands a paid gift card to procurement, then completes',
  async () => {
    const tq = env.taskQueue();
    const batchId = uniqueId('bat');
    const giftOrder = uniqueId('ord_gift');
    const placeBatchChunk = jest.fn(
      async (c: { batchId: string; from: number; to: number }): Promise<BatchChunkResult> => ({
        total: 7,
        decided: Math.min(7, c.to),
        handOffs: c.from === 2 ? [{ orderId: giftOrder, accountId: 'acct-1', externalOrderId: 'gift-1' }] : [],
      }),
    );
    const completeBatch = jest.fn(async () => ({ batchId, total: 7, placed: 6, rejected: 1 }));
    const beginProcurement = jest.fn(async () => ({
      facts: { status: 'delivered', fulfillmentStatus: 'delivered', qty: 1, fulfilledQuantity: 1 },
      timing: { retryBaseSeconds: 0, retryCapSeconds: 1, maxRounds: 1, deadlineSeconds: 60 },
    }));
    env.routeChild(procurementWorkflowId(giftOrder), tq);
    await env.withWorker(tq, { placeBatchChunk, completeBatch, beginProcurement }, async () => {
      const handle = await env.client.workflow.start('batchWorkflow', {
        workflowId: batchWorkflowId(batchId),
        taskQueue: tq,
        args: [{ batchId, chunkLines: 2, chunksPerRun: 2 }],
      });
      expect(await handle.result()).toEqual({ batchId, total: 7, placed: 6, rejected: 1 });
      expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);
      expect(await env.client.workflow.getHandle(procurementWorkflowId(giftOrder)).result()).toMatchObject({
        orderId: giftOrder,
        phase: 'delivered',
      });
    });
    expect(placeBatchChunk.mock.calls.map(([c]) => [c.from, c.to])).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
      [6, 8],
    ]);
    expect(completeBatch.mock.calls).toEqual([[batchId]]);
    expect(beginProcurement.mock.calls).toEqual([[giftOrder]]);
  },
);
