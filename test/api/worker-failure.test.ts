import type { Server } from 'node:http';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { WorkflowBundleOption } from '@temporalio/worker';
import { createApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { orderWorkflowId, placeOrderUpdate } from '../../src/contracts/orders-contract';
import { createActivities } from '../../activities/all-activities';
import { createWorker } from '../../src/temporal/temporal-worker';
import { testWorkflowBundle } from '../helpers/workflow-bundle';
import { WorkerSupervisor } from '../../src/temporal/worker-supervisor';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { freePort, startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// Issue 11 item 3: a failing worker never ends the process, and a poison task never stops the
// others. The worker here really fails inside Temporal's core, the way the probe did: an
// activity failure whose message holds a lone surrogate, which the core bridge cannot encode.
// The SDK (1.24) cannot clean up after such a failure: the failed worker's finalizeShutdown refuses
// ("Worker still in use") and so does its workflow thread's destroy ("Workflow execution context
// should have been disposed first"), so that thread lives on in this process. A production worker
// process gives up after WORKER_MAX_CONSECUTIVE_FAILURES and exits; here the thread keeps the jest
// worker that ran this file from exiting by itself, and jest prints "A worker process has failed to
// exit gracefully".
let h: Harness;
let bundle: WorkflowBundleOption;

beforeAll(async () => {
  h = await startHarness({}, { worker: false });
  bundle = await testWorkflowBundle();
});
afterAll(() => h?.stop());

test('a worker that fails in the core is restarted with backoff while the API in the same process keeps answering', async () => {
  const { accountId, apiKey } = await h.account('10.00');
  const activities = createActivities({ orm: h.services.orm, config: h.config, providers: h.services.providers });
  let poisoned = true;
  let creations = 0;
  const supervisor = new WorkerSupervisor({
    logger: createLogger('silent'),
    minBackoffMs: 200,
    maxBackoffMs: 1000,
    create: () => {
      creations++;
      // Until the poison is lifted, placement throws a message the core cannot encode, and both
      // defences that would have kept it from the core are left out on purpose: the safe-failure
      // interceptor, and the failure converter that moves messages into encrypted payloads.
      const placeOrder = poisoned
        ? async () => {
            throw new Error('product \ud800 not found');
          }
        : activities.placeOrder;
      return createWorker({
        address: h.config.TEMPORAL_ADDRESS!,
        namespace: h.config.TEMPORAL_NAMESPACE,
        taskQueue: h.config.TEMPORAL_TASK_QUEUE,
        config: h.config,
        workflowBundle: bundle,
        activities: { ...activities, placeOrder },
        interceptors: {},
        dataConverter: { payloadCodecs: dataConverter(parseKeyRing(h.config.TEMPORAL_PAYLOAD_KEYS)).payloadCodecs },
      });
    },
  });
  const app = createApp({
    orm: h.services.orm,
    // The failed core never completes the order's workflow task: Temporal hands it out again only
    // after the task's timeout (10 s), to the worker restarted by then. With the restart on a loaded
    // machine that came near the default 15 s placement deadline, and the order was answered 503.
    temporal: { ...h.services.temporal, placementDeadlineMs: 60_000 },
    providers: h.services.providers,
    config: h.config,
    logger: createLogger('silent'),
    worker: supervisor,
  });
  const port = await freePort();
  const server = await new Promise<Server>((ok) => {
    const s = app.listen(port, '127.0.0.1', () => ok(s));
  });
  const base = `http://127.0.0.1:${port}`;
  const api = client(`${base}/wholesale/v1`, apiKey);
  try {
    await supervisor.start();
    // The order's placement activity kills the worker in the core; the caller waits for it.
    const order = api.post('/orders', { externalOrderId: 'poisoned-1', productId: 'prod_api_order_test', qty: 1 });

    const degraded = await eventually(
      async () => {
        const r = await call(`${base}/healthz`);
        return r.body.worker?.restarts >= 1 ? r : undefined;
      },
      30_000,
      50,
    );
    expect(degraded.status).toBe(200);
    expect(degraded.body.ok).toBe(true);
    expect(degraded.body.worker.lastError).toMatch(/\S/);
    // The API of this very process answers while the worker is down and restarting.
    expect((await api.get('/balance')).body).toEqual({ balance: '10.00', currency: 'USDT' });

    // The poison is lifted (a fixed deployment): the restarted worker completes the same order,
    // whose activity Temporal retried on its own schedule.
    poisoned = false;
    const placed = await order;
    expect(placed.status).toBe(200);
    expect(placed.body).toMatchObject({ status: 'delivered', reused: false });
    const healthy = await eventually(
      async () => {
        const r = await call(`${base}/healthz`);
        return r.body.status === 'ok' ? r : undefined;
      },
      30_000,
      100,
    );
    expect(healthy.body.worker.phase).toBe('running');
    expect(creations).toBeGreaterThanOrEqual(2);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('9.99');
  } finally {
    await supervisor.stop();
    await new Promise<void>((ok) => server.close(() => ok()));
  }
}, 120_000);

test('an old poison order cannot crash-loop the production worker: it fails alone and every other order goes on', async () => {
  const { accountId, apiKey } = await h.account('5.00');
  const api = client(h.apiUrl, apiKey);
  // A placement holding a lone surrogate, sent to Temporal directly as if it had been accepted
  // before the edge's hygiene rule existed, waits for a worker.
  const poison = h.services.temporal.client.workflow.executeUpdateWithStart(placeOrderUpdate, {
    args: [{ productId: 'prod_\ud800', qty: 1, payment: 'balance', source: 'rest', placementId: 'old-poison' }],
    startWorkflowOperation: new WithStartWorkflowOperation('orderWorkflow', {
      workflowId: orderWorkflowId(accountId, 'old-poison'),
      taskQueue: h.config.TEMPORAL_TASK_QUEUE,
      args: [{ accountId, externalOrderId: 'old-poison' }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });
  const worker = startWorkerProcess(h, { LOG_LEVEL: 'info' });
  const lines: string[] = [];
  worker.stdout?.on('data', (d) => lines.push(...String(d).split('\n').filter(Boolean)));
  worker.stderr?.on('data', (d) => lines.push(...String(d).split('\n').filter(Boolean)));
  let exited: number | null = null;
  worker.once('exit', (code) => (exited = code ?? -1));
  try {
    // A rejection is an answer of the placement (issue 14), not a failure of anything.
    expect(await poison).toMatchObject({ outcome: 'rejected', rejection: { code: 'not_found' } });

    const ok = await api.post('/orders', { externalOrderId: 'after-poison', productId: 'prod_api_order_test', qty: 1 });
    expect(ok.body).toMatchObject({ status: 'delivered' });
    expect(exited).toBeNull();
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('4.99');
    // The worker never failed: one line per event, none about a failure of the worker itself.
    expect(lines.some((l) => /temporal worker failed|Worker failed/.test(l))).toBe(false);
  } finally {
    worker.kill('SIGTERM');
    await new Promise((r) => (exited !== null ? r(null) : worker.once('exit', r)));
  }
}, 120_000);
