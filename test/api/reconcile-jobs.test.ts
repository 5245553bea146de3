import { batchWorkflowId } from '../../src/contracts/batches-contract';
import { exportWorkflowId } from '../../src/contracts/exports-contract';
import { reconcileScheduleId } from '../../src/contracts/reconcile-contract';
import { parseCsvWithHeader } from '../../src/domain/csv';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { seedOrders } from '../helpers/seed-rows';

// Exports and batches survive Temporal losing their workflow: each is terminated mid-way (as a
// lost execution looks to the reconciler), and the reconciler, run by its Schedule every 2 s,
// starts it again from what Postgres holds: the export's file is written on from its last page
// (every row once, in order), the batch places only the lines without an outcome (one order and
// one debit per line).
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    RECONCILE_SECONDS: '2',
    RECONCILE_GRACE_SECONDS: '1',
    EXPORT_PAGE_ROWS: '5',
    EXPORT_STREAM_MAX_ROWS: '1000',
    BATCH_CHUNK_LINES: '5',
    RATE_LIMIT_PER_MINUTE: '100000',
  });
});
afterAll(async () => {
  await h?.services.temporal.client.schedule
    .getHandle(reconcileScheduleId(h.config.TEMPORAL_TASK_QUEUE))
    .delete()
    .catch(() => undefined);
  await h?.stop();
});

const repairs = (subjectId: string) =>
  h.services.orm.em
    .fork()
    .execute<{ kind: string; action: string }[]>('select kind, action from reconciler_repairs where subject_id = ?', [
      subjectId,
    ]);

test('an export whose workflow Temporal lost is written on from its last page by the reconciler', async () => {
  const r = await reseller(h);
  const start = new Date(Date.now() - 400 * 60_000);
  await seedOrders(h, r.accountId, 300, { tag: 'rec', start, everyMs: 60_000 });
  const range = { from: start.toISOString(), to: new Date().toISOString() };
  const created = await r.api.post('/exports', { externalExportId: 'lost-1', kind: 'orders', ...range });
  const id = created.body.exportId;
  await eventually(async () => (await r.api.get(`/exports/${id}`)).body.rows >= 20, 30_000, 20, 'some pages written');
  await h.services.temporal.client.workflow
    .getHandle(exportWorkflowId(id))
    .terminate('test: Temporal lost this workflow');
  const stopped = (await r.api.get(`/exports/${id}`)).body;
  expect(stopped.status).toBe('running');

  const done = await eventually(
    async () => {
      const e = (await r.api.get(`/exports/${id}`)).body;
      return e.status === 'ready' ? e : undefined;
    },
    60_000,
    200,
    'export ready after the repair',
  );
  expect(done).toMatchObject({ rows: 300, totalRows: 300 });
  expect(await repairs(id)).toEqual([{ kind: 'export', action: 'restarted' }]);
  // Every order once, in order: no page lost or written twice across the repair. (The reconciler
  // also settles the seeded orders that have no workflow of their own, so only the ids are compared.)
  const ids = (csv: string) => parseCsvWithHeader(csv).rows.map((row) => row.id);
  const file = ids(await (await fetch(done.downloadUrl)).text());
  expect(file).toEqual(Array.from({ length: 300 }, (_, i) => `ord_rec_${i + 1}`));
  expect(file).toEqual(ids((await r.api.get(`/exports/orders.csv?from=${range.from}&to=${range.to}`)).text));
});

test('a batch whose workflow Temporal lost places its remaining lines once the reconciler starts it again', async () => {
  const r = await reseller(h, '10.00');
  const lines = Array.from({ length: 200 }, (_, i) => ({
    externalOrderId: `lost-${i}`,
    productId: 'prod_api_order_test',
    qty: 1,
  }));
  const created = await r.api.post('/batches', { externalBatchId: 'lost-1', lines });
  const id = created.body.batchId;
  await eventually(async () => (await r.api.get(`/batches/${id}`)).body.placed >= 20, 30_000, 20, 'some lines placed');
  await h.services.temporal.client.workflow
    .getHandle(batchWorkflowId(id))
    .terminate('test: Temporal lost this workflow');
  expect((await r.api.get(`/batches/${id}`)).body.pending).toBeGreaterThan(0);

  const done = await eventually(
    async () => {
      const b = (await r.api.get(`/batches/${id}`)).body;
      return b.status === 'completed' ? b : undefined;
    },
    60_000,
    200,
    'batch completed after the repair',
  );
  expect(done).toMatchObject({ total: 200, placed: 200, rejected: 0, pending: 0 });
  expect(await repairs(id)).toEqual([{ kind: 'batch', action: 'restarted' }]);
  const ledger = await expectLedgerMatchesBalance(h, r.accountId);
  expect(ledger.rows.filter((row) => row.type === 'purchase')).toHaveLength(200);
  expect(ledger.balance).toBe('8.00');
});
