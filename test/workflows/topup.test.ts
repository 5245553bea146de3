import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { paymentNotifiedSignal, type PaymentTiming } from '../../src/contracts/payments-contract';
import {
  openTopupUpdate,
  topupStateQuery,
  topupWorkflowId,
  type OpenTopupRequest,
} from '../../src/contracts/topups-contract';
import { keepHistory, uniqueId, until, workflowEnv, type WorkflowEnv } from './env';

// topupWorkflow's state table with stubbed activities (spec 3.3, issue 17): opened by a local
// activity in the update, paid (callback, or status sync) and credited once, expired unpaid, paid
// late, a callback for a closed run, refused (an answer, and the workflow ends), an unexpected
// failure (the update fails, not the workflow), recovery of a lost opening from Postgres, and
// concurrent openings one at a time.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const TIMING: PaymentTiming = { syncSeconds: 1, lateWatchSeconds: 3, latePollSeconds: 1 };
const ACCOUNT = '00000000-0000-4000-8000-000000000002';

const req = (over: Partial<OpenTopupRequest> = {}): OpenTopupRequest => ({
  orderId: 'ord_t',
  externalTopupId: 'k',
  amount: '5.00',
  currency: 'USDT',
  source: 'rest',
  placementId: uniqueId('req'),
  ...over,
});

function open(taskQueue: string, key: string, r: OpenTopupRequest) {
  return env.client.workflow.executeUpdateWithStart(openTopupUpdate, {
    args: [r],
    updateId: r.placementId,
    startWorkflowOperation: new WithStartWorkflowOperation('topupWorkflow', {
      workflowId: topupWorkflowId(ACCOUNT, key),
      taskQueue,
      args: [{ accountId: ACCOUNT, key, timing: TIMING }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });
}

function stubs(windowMs: number) {
  let expiresAt = 0;
  let settled = false;
  let inFlight = 0;
  const seen = { maxInFlight: 0 };
  return {
    seen,
    activities: {
      openTopup: jest.fn(async (r: OpenTopupRequest) => {
        seen.maxInFlight = Math.max(seen.maxInFlight, ++inFlight);
        await new Promise((res) => setTimeout(res, 30));
        inFlight--;
        return { outcome: 'opened', orderId: r.orderId, reused: false, status: 'pending' };
      }),
      paymentState: jest.fn(async () => {
        expiresAt ||= Date.now() + windowMs;
        return { status: settled ? 'delivered' : 'pending', checkoutId: 'chk', expiresAt, kind: 'topup' };
      }),
      syncPayment: jest.fn(async () => 'pending'),
      settlePayment: jest.fn(async () => (settled ? 'already_settled' : ((settled = true), 'settled'))),
      expirePayment: jest.fn(async () => 'expired'),
    },
  };
}

test.concurrent('opened, paid by callback (twice: a duplicate callback), credited once, delivered', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(20_000);
  await env.withWorker(tq, s.activities, async () => {
    expect(await open(tq, key, req())).toEqual({
      outcome: 'opened',
      orderId: 'ord_t',
      reused: false,
      status: 'pending',
    });
    const handle = env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key));
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
    expect(await handle.result()).toMatchObject({ orderId: 'ord_t', status: 'delivered' });
  });
  expect(s.activities.settlePayment.mock.calls).toEqual([['ord_t', 'callback']]);
});

test.concurrent('unpaid, it expires; a payment after that is still credited, as late', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(1_000);
  await env.withWorker(tq, s.activities, async () => {
    await open(tq, key, req());
    const handle = env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key));
    const deadline = Date.now() + 10_000;
    while ((await handle.query(topupStateQuery)).status !== 'expired' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(s.activities.expirePayment).toHaveBeenCalledTimes(1);
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
    expect(await handle.result()).toMatchObject({ status: 'delivered' });
  });
  expect(s.activities.settlePayment.mock.calls).toEqual([['ord_t', 'late']]);
});

test.concurrent('left unpaid through the late watch, it ends expired', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(500);
  await env.withWorker(tq, s.activities, async () => {
    await open(tq, key, req());
    expect(await env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key)).result()).toMatchObject({
      status: 'expired',
    });
  });
  expect(s.activities.settlePayment).not.toHaveBeenCalled();
});

test.concurrent(
  "a refused opening is the update's answer and the workflow ends without waiting for a payment",
  async () => {
    const tq = env.taskQueue();
    const key = uniqueId('top');
    const refused = { outcome: 'rejected', rejection: { code: 'too_many_pending_topups', message: '5 unpaid' } };
    const s = stubs(10_000);
    await env.withWorker(tq, { ...s.activities, openTopup: jest.fn(async () => refused) }, async () => {
      expect(await open(tq, key, req())).toEqual(refused);
      expect(await env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key)).result()).toMatchObject({
        orderId: null,
        status: 'new',
      });
    });
    expect(s.activities.paymentState).not.toHaveBeenCalled();
  },
);

test.concurrent('openings that arrive together run one at a time', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(20_000);
  await env.withWorker(tq, s.activities, async () => {
    await Promise.all(Array.from({ length: 4 }, () => open(tq, key, req())));
    const handle = env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key));
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
    await handle.result();
  });
  expect(s.seen.maxInFlight).toBe(1);
});

test.concurrent('a payment confirmed by the status sync (no callback) is credited once', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(20_000);
  await env.withWorker(tq, { ...s.activities, syncPayment: jest.fn(async () => 'paid') }, async () => {
    await open(tq, key, req());
    expect(await env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key)).result()).toMatchObject({
      status: 'delivered',
      syncs: 1,
    });
  });
  expect(s.activities.settlePayment.mock.calls).toEqual([['ord_t', 'status_sync']]);
});

test.concurrent(
  'a callback for a closed run starts a new run with the signal, which credits the payment as late',
  async () => {
    const tq = env.taskQueue();
    const key = uniqueId('top');
    const s = stubs(1_000);
    const paymentState = jest.fn(async () => ({
      status: 'expired',
      checkoutId: 'chk',
      expiresAt: Date.now() - 1_000,
      kind: 'topup',
    }));
    await env.withWorker(tq, { ...s.activities, paymentState }, async () => {
      const handle = await env.client.workflow.signalWithStart('topupWorkflow', {
        workflowId: topupWorkflowId(ACCOUNT, key),
        taskQueue: tq,
        args: [{ accountId: ACCOUNT, key, timing: TIMING }],
        signal: paymentNotifiedSignal,
        signalArgs: [{ orderId: 'ord_t', status: 'paid' }],
      });
      expect(await handle.result()).toMatchObject({ orderId: 'ord_t', status: 'delivered' });
    });
    expect(s.activities.openTopup).not.toHaveBeenCalled();
    expect(s.activities.settlePayment.mock.calls).toEqual([['ord_t', 'late']]);
  },
);

test.concurrent(
  'an unexpected opening failure is retried, then fails the update as internal_error; the workflow ends without a payment',
  async () => {
    const tq = env.taskQueue();
    const key = uniqueId('top');
    const s = stubs(10_000);
    const openTopup = jest.fn(async () => {
      throw new Error('provider client crashed');
    });
    await env.withWorker(tq, { ...s.activities, openTopup }, async () => {
      const err = await open(tq, key, req()).catch((e) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(err.cause).toMatchObject({ type: 'internal_error' });
      expect(await env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key)).result()).toMatchObject({
        orderId: null,
        status: 'new',
      });
    });
    expect(openTopup).toHaveBeenCalledTimes(5);
    expect(s.activities.paymentState).not.toHaveBeenCalled();
  },
);

test.concurrent(
  'an opening lost in a Temporal restart is found in Postgres after the recovery time, and its payment still credited',
  async () => {
    const tq = env.taskQueue();
    const key = uniqueId('top');
    const s = stubs(20_000);
    const findOpenedTopup = jest.fn(async () => ({ orderId: 'ord_t', status: 'pending' }));
    await env.withWorker(tq, { ...s.activities, findOpenedTopup }, async () => {
      const handle = await env.client.workflow.start('topupWorkflow', {
        workflowId: topupWorkflowId(ACCOUNT, key),
        taskQueue: tq,
        args: [{ accountId: ACCOUNT, key, timing: { ...TIMING, placementRecoverySeconds: 1 } }],
      });
      const deadline = Date.now() + 10_000;
      while ((await handle.query(topupStateQuery)).orderId === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
      expect(await handle.result()).toMatchObject({ orderId: 'ord_t', status: 'delivered' });
    });
    expect(findOpenedTopup.mock.calls).toEqual([[{ accountId: ACCOUNT, key }]]);
    expect(s.activities.openTopup).not.toHaveBeenCalled();
    expect(s.activities.settlePayment.mock.calls).toEqual([['ord_t', 'callback']]);
  },
);

test.concurrent(
  'an opening that arrives while the recovery asks Postgres, and answers after the run settled for none, is still followed to its expiry',
  async () => {
    const tq = env.taskQueue();
    const key = uniqueId('toplate');
    const s = stubs(1_000);
    let openingStarted!: () => void;
    const started = new Promise<void>((r) => (openingStarted = r));
    // The opening outlasts the workflow task (2 s here, heartbeated at 1.6 s), so the recovery's
    // "nothing in Postgres" reaches the run while the opening is still writing.
    const openTopup = jest.fn(async (r: OpenTopupRequest) => {
      openingStarted();
      await new Promise((res) => setTimeout(res, 4_000));
      return { outcome: 'opened', orderId: r.orderId, reused: false, status: 'pending' };
    });
    const handle = env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key));
    let opened: Promise<unknown> | undefined;
    const findOpenedTopup = jest.fn(async () => {
      opened = handle.executeUpdate(openTopupUpdate, { args: [req({ orderId: 'ord_tl' })] });
      await started;
      return null;
    });
    await env.withWorker(tq, { ...s.activities, openTopup, findOpenedTopup }, async () => {
      await env.client.workflow.start('topupWorkflow', {
        workflowId: topupWorkflowId(ACCOUNT, key),
        taskQueue: tq,
        workflowTaskTimeout: '2 seconds',
        args: [{ accountId: ACCOUNT, key, timing: { ...TIMING, lateWatchSeconds: 0, placementRecoverySeconds: 1 } }],
      });
      await until(() => opened !== undefined, 'the retried opening');
      expect(await opened).toMatchObject({ outcome: 'opened', orderId: 'ord_tl' });
      expect(await handle.result()).toMatchObject({ orderId: 'ord_tl', status: 'expired' });
    });
    expect(findOpenedTopup).toHaveBeenCalledTimes(1);
    expect(s.activities.expirePayment.mock.calls).toEqual([['ord_tl']]);
    const history = await handle.fetchHistory();
    await env.replay(history, topupWorkflowId(ACCOUNT, key));
    await keepHistory('topupWorkflow', topupWorkflowId(ACCOUNT, key), history);
  },
  30_000,
);
