import type { ChildProcess } from 'node:child_process';
import { WorkflowNotFoundError } from '@temporalio/client';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { workersLive } from '../../src/metrics/registry';
import { startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { client, eventually, postRetrying, type ApiResponse } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { killed } from '../helpers/processes';

// Issue 39: with no worker polling the task queue (none started, or the only one killed), a
// placement is answered 503 (`retryable: true`, Retry-After) at once by admission control, from
// the workers' heartbeat rows, instead of after PLACEMENT_TIMEOUT_MS: here that deadline is longer
// than the test, so any answer at all is the refusal, and no workflow was started for it. The
// worker is the production `npm run worker` process, killed with SIGKILL.
let h: Harness;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  h = await startHarness({ PLACEMENT_TIMEOUT_MS: '600000' }, { worker: false });
});
afterAll(async () => {
  await killed(worker);
  await h?.stop();
});

const live = async () => (await workersLive.get()).values[0]?.value ?? 0;

async function expectRefusedForNoWorker(res: ApiResponse, accountId: string, externalId: string) {
  expect({
    status: res.status,
    error: res.body.error,
    retryable: res.body.retryable,
    reason: res.body.details?.reason,
  }).toEqual({
    status: 503,
    error: 'service_unavailable',
    retryable: true,
    reason: 'no_worker',
  });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  await expect(
    h.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, externalId)).describe(),
  ).rejects.toBeInstanceOf(WorkflowNotFoundError);
  expect(
    await h.services.orm.em
      .fork()
      .execute('select id from orders where account_id = ? and (external_order_id = ? or external_topup_id = ?)', [
        accountId,
        externalId,
        externalId,
      ]),
  ).toEqual([]);
}

test('no worker was ever started: orders and top-ups are refused at once, nothing is charged or started', async () => {
  const { accountId, apiKey } = await h.account('5.00');
  const api = client(h.apiUrl, apiKey);
  await expectRefusedForNoWorker(
    await api.post('/orders', { externalOrderId: 'none-1', productId: 'prod_api_order_test', qty: 1 }),
    accountId,
    'none-1',
  );
  await expectRefusedForNoWorker(
    await api.post('/topup', { externalTopupId: 'none-topup', amount: '10.00' }),
    accountId,
    'none-topup',
  );
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect([money.balance, money.rows.map((r) => r.type)]).toEqual(['5.00', ['adjust']]);
});

test('the only worker killed: refused at once once its heartbeat is stale; its retry is placed once when a worker is back', async () => {
  const { accountId, apiKey } = await h.account('5.00');
  const api = client(h.apiUrl, apiKey);
  worker = startWorkerProcess(h, {});
  const first = await postRetrying(api, '/orders', {
    externalOrderId: 'before-kill',
    productId: 'prod_api_order_test',
    qty: 1,
  });
  expect(first.body).toMatchObject({ status: 'delivered', reused: false });
  expect(await live()).toBe(1);

  const killed = worker;
  const exited = new Promise((r) => killed.once('exit', r));
  killed.kill('SIGKILL');
  await exited;
  await eventually(async () => (await live()) === 0, 30_000, 100, 'the killed worker counted as gone');
  await expectRefusedForNoWorker(
    await api.post('/orders', { externalOrderId: 'while-down', productId: 'prod_api_order_test', qty: 1 }),
    accountId,
    'while-down',
  );
  // A replay of the order placed before the kill needs no worker: it is answered from Postgres.
  const replay = await api.post('/orders', {
    externalOrderId: 'before-kill',
    productId: 'prod_api_order_test',
    qty: 1,
  });
  expect(replay.body).toEqual({ ...first.body, reused: true });
  const during = await expectLedgerMatchesBalance(h, accountId);
  expect(during.rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);

  // The client retries the refused order unchanged until a worker is back: placed once.
  worker = startWorkerProcess(h, {});
  const retried = await postRetrying(api, '/orders', {
    externalOrderId: 'while-down',
    productId: 'prod_api_order_test',
    qty: 1,
  });
  expect(retried.body).toMatchObject({ status: 'delivered', reused: false });
  const again = await api.post('/orders', { externalOrderId: 'while-down', productId: 'prod_api_order_test', qty: 1 });
  expect(again.body).toEqual({ ...retried.body, reused: true });
  const after = await expectLedgerMatchesBalance(h, accountId);
  expect(after.rows.map((r) => r.type)).toEqual(['adjust', 'purchase', 'purchase']);
  expect(after.balance).toBe('4.98');
}, 240_000);

describe('a worker that started since the API last read the heartbeat rows', () => {
  // The API reads the rows every half beat; here its beat is a minute long, so its view stays "no
  // worker" for half a minute unless a placement makes it look again.
  let slow: Harness;
  let started: ChildProcess | undefined;
  beforeAll(async () => {
    slow = await startHarness(
      { PLACEMENT_TIMEOUT_MS: '600000', WORKER_HEARTBEAT_MS: '60000', WORKER_HEARTBEAT_STALE_MS: '120000' },
      { worker: false },
    );
  });
  afterAll(async () => {
    await killed(started);
    await slow?.stop();
  });

  test('is counted by the first placement after its row is written: placed once, not refused', async () => {
    const { accountId, apiKey } = await slow.account('5.00');
    const api = client(slow.apiUrl, apiKey);
    const refused = await api.post('/orders', {
      externalOrderId: 'before-start',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    expect(refused.body.details?.reason).toBe('no_worker');

    // The production worker beats every half second (the default) and writes its row before it polls.
    started = startWorkerProcess(slow, {});
    await eventually(
      async () => {
        const rows = await slow.services.orm.em
          .fork()
          .execute('select id from worker_heartbeats where task_queue = ?', [slow.config.TEMPORAL_TASK_QUEUE]);
        return rows.length === 1;
      },
      60_000,
      100,
      'the worker process wrote its heartbeat row',
    );
    const placed = await api.post('/orders', {
      externalOrderId: 'after-start',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    expect(placed.body).toMatchObject({ status: 'delivered', reused: false });
    const money = await expectLedgerMatchesBalance(slow, accountId);
    expect([money.balance, money.rows.map((r) => r.type)]).toEqual(['4.99', ['adjust', 'purchase']]);
  }, 120_000);
});
