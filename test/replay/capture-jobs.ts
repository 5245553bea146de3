// Regenerates the replay fixtures of exportWorkflow and batchWorkflow (test/fixtures/histories),
// and adds reconcileWorkflow histories that walk their checks: an export of several pages whose
// link expires, one of an empty range, one bounded to two pages a run (its first run and its last);
// a batch of placed, replayed and refused lines with a gift card handed to procurement, in chunks
// of two, so it continues as new (its first run and its last); and a reconciler run. The soak
// capture (./capture.ts) leaves these alone. Run it once after a change to these workflows
// (reconcile histories are added beside the ones there are, not replaced).
//
//   node --import tsx test/replay/capture-jobs.ts
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import { startDevTemporal } from '../../src/dev/temporal';
import { exportWorkflowId } from '../../src/contracts/exports-contract';
import { insertExport } from '../../src/db/exports-store';
import { exportWindow } from '../../src/services/exports/export-csv';
import { batchWorkflowId } from '../../src/contracts/batches-contract';
import { reconcileWorkflowId } from '../../src/contracts/reconcile-contract';
import type { exportWorkflow } from '../../workflows/export-workflow';
import type { reconcileWorkflow } from '../../workflows/reconcile-workflow';
import { freePort } from '../helpers/ports';
import { startHarness } from '../helpers/harness';
import { client as apiClient, eventually } from '../helpers/http';
import { writeFixtures } from './capture';

async function main() {
  const keys = `capture:${randomBytes(32).toString('base64')}`;
  process.env.TEMPORAL_PAYLOAD_KEYS = keys;
  const root = mkdtempSync(join(tmpdir(), 'wholesale-capture-jobs-'));
  const pg = await startEmbeddedPostgres({ dataDir: join(root, 'pg'), port: await freePort(), database: 'postgres' });
  const temporal = await startDevTemporal({ port: await freePort(), uiPort: 0, namespace: 'default' });
  process.env.TEST_DATABASE_URL = pg.url;
  const h = await startHarness({
    TEMPORAL_ADDRESS: temporal.address,
    EXPORT_PAGE_ROWS: '3',
    EXPORT_LINK_SECONDS: '2',
    BATCH_CHUNK_LINES: '2',
    RECONCILE_GRACE_SECONDS: '0',
  });
  try {
    const a = await h.account('40.00');
    const api = apiClient(h.apiUrl, a.apiKey);
    for (let i = 0; i < 7; i++)
      await api.post('/orders', { externalOrderId: `cap-${i}`, productId: 'prod_api_order_test', qty: 1 });
    const range = {
      from: new Date(Date.now() - 3_600_000).toISOString(),
      to: new Date(Date.now() + 60_000).toISOString(),
    };
    const pages = await api.post('/exports', { externalExportId: 'cap-pages', kind: 'orders', ...range });
    const empty = await api.post('/exports', {
      externalExportId: 'cap-empty',
      kind: 'ledger',
      from: '2001-01-01',
      to: '2001-01-02',
    });
    const lines = [
      ...Array.from({ length: 22 }, (_, i) => ({
        externalOrderId: `bl-${i}`,
        productId: 'prod_api_order_test',
        qty: 1,
      })),
      { externalOrderId: 'bl-0', productId: 'prod_api_order_test', qty: 1 },
      { externalOrderId: 'bl-gift', productId: 'prod_robux_400', qty: 1 },
      { externalOrderId: 'bl-big', productId: 'prod_chatgpt_plus_1m', qty: 3 },
    ];
    const batch = await api.post('/batches', { externalBatchId: 'cap-batch', lines });

    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, dataConverter: dataConverter(parseKeyRing(keys)) });
    // An export bounded to two pages a run: its row written as POST /exports writes it, its workflow started here with that bound.
    const em = h.services.orm.em.fork();
    const boundedRange = { accountId: a.accountId, from: new Date(range.from), to: new Date(range.to) };
    const { row: bounded } = await insertExport(em, {
      id: 'exp_capture_bounded',
      externalExportId: 'cap-bounded',
      kind: 'orders',
      ...boundedRange,
      window: await exportWindow(em, 'orders', boundedRange),
    });
    const boundedId = exportWorkflowId(bounded.id);
    await client.workflow.start<typeof exportWorkflow>('exportWorkflow', {
      workflowId: boundedId,
      taskQueue: h.config.TEMPORAL_TASK_QUEUE,
      args: [{ exportId: bounded.id, pagesPerRun: 2 }],
    });
    const ids = [
      exportWorkflowId(pages.body.exportId),
      exportWorkflowId(empty.body.exportId),
      boundedId,
      batchWorkflowId(batch.body.batchId),
    ];
    await eventually(
      async () => {
        const statuses = await Promise.all(
          ids.map(async (id) => (await client.workflow.getHandle(id).describe()).status.name),
        );
        return statuses.every((s) => s === 'COMPLETED');
      },
      120_000,
      500,
      'exports expired and the batch completed',
    );
    // Every run of each (a continued one and its last), once visibility lists them all.
    const typeOf = (id: string) => (id.startsWith('batch:') ? 'batchWorkflow' : 'exportWorkflow');
    const closed = await eventually(
      async () => {
        const found: { workflowId: string; runId: string; type: string }[] = [];
        for (const id of ids) {
          for await (const wf of client.workflow.list({ query: `WorkflowId = "${id}"` }))
            found.push({ workflowId: id, runId: wf.runId, type: typeOf(id) });
        }
        return found.length >= ids.length + 2 ? found : undefined;
      },
      30_000,
      500,
      'every run listed',
    );
    await writeFixtures(client, keys, ['exportWorkflow', 'batchWorkflow'], closed, {
      jobs: 'test/replay/capture-jobs.ts',
    });

    const reconcile = await client.workflow.start<typeof reconcileWorkflow>('reconcileWorkflow', {
      workflowId: `${reconcileWorkflowId(h.config.TEMPORAL_TASK_QUEUE)}-jobs`,
      taskQueue: h.config.TEMPORAL_TASK_QUEUE,
      args: [{}],
    });
    await reconcile.result();
    await writeFixtures(
      client,
      keys,
      ['reconcileWorkflow'],
      [{ workflowId: reconcile.workflowId, runId: (await reconcile.describe()).runId, type: 'reconcileWorkflow' }],
      { reconcile: 'test/replay/capture-reconcile.ts, test/replay/capture-jobs.ts' },
      { add: true },
    );
    await connection.close();
  } finally {
    await h.stop();
    await temporal.stop();
    await pg.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
