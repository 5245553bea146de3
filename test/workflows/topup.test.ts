import { WithStartWorkflowOperation } from '@temporalio/client';
import { openTopupUpdate, paymentNotifiedSignal, topupStateQuery, topupWorkflowId, type OpenTopupRequest, type PaymentTiming } from '../../src/temporal/payments';
import { uniqueId, workflowEnv, type WorkflowEnv } from './env';

// topupWorkflow's state table with stubbed activities (spec 3.3, issue 17): opened by a local
// activity in the update, paid (callback) and credited once, expired unpaid, paid late,
// refused (an answer, and the workflow ends), and concurrent openings one at a time.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const TIMING: PaymentTiming = { syncSeconds: 1, lateWatchSeconds: 3, latePollSeconds: 1 };
const ACCOUNT = '00000000-0000-4000-8000-000000000002';

const req = (over: Partial<OpenTopupRequest> = {}): OpenTopupRequest => ({
  orderId: 'ord_t', externalTopupId: 'k', amount: '5.00', currency: 'USDT', source: 'rest', placementId: uniqueId('req'), ...over,
});

function open(taskQueue: string, key: string, r: OpenTopupRequest) {
  return env.client.workflow.executeUpdateWithStart(openTopupUpdate, {
    args: [r], updateId: r.placementId,
    startWorkflowOperation: new WithStartWorkflowOperation('topupWorkflow', {
      workflowId: topupWorkflowId(ACCOUNT, key), taskQueue, args: [{ accountId: ACCOUNT, key, timing: TIMING }], workflowIdConflictPolicy: 'USE_EXISTING',
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

test('opened, paid by callback (twice: a duplicate callback), credited once, delivered', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(20_000);
  await env.withWorker(tq, s.activities, async () => {
    expect(await open(tq, key, req())).toEqual({ outcome: 'opened', orderId: 'ord_t', reused: false, status: 'pending' });
    const handle = env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key));
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
    expect(await handle.result()).toMatchObject({ orderId: 'ord_t', status: 'delivered' });
  });
  expect(s.activities.settlePayment.mock.calls).toEqual([['ord_t', 'callback']]);
});

test('unpaid, it expires; a payment after that is still credited, as late', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(1_000);
  await env.withWorker(tq, s.activities, async () => {
    await open(tq, key, req());
    const handle = env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key));
    const deadline = Date.now() + 10_000;
    while ((await handle.query(topupStateQuery)).status !== 'expired' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(s.activities.expirePayment).toHaveBeenCalledTimes(1);
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_t', status: 'paid' });
    expect(await handle.result()).toMatchObject({ status: 'delivered' });
  });
  expect(s.activities.settlePayment.mock.calls).toEqual([['ord_t', 'late']]);
});

test('left unpaid through the late watch, it ends expired', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const s = stubs(500);
  await env.withWorker(tq, s.activities, async () => {
    await open(tq, key, req());
    expect(await env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key)).result()).toMatchObject({ status: 'expired' });
  });
  expect(s.activities.settlePayment).not.toHaveBeenCalled();
});

test('a refused opening is the update\'s answer and the workflow ends without waiting for a payment', async () => {
  const tq = env.taskQueue();
  const key = uniqueId('top');
  const refused = { outcome: 'rejected', rejection: { code: 'too_many_pending_topups', message: '5 unpaid' } };
  const s = stubs(10_000);
  await env.withWorker(tq, { ...s.activities, openTopup: jest.fn(async () => refused) }, async () => {
    expect(await open(tq, key, req())).toEqual(refused);
    expect(await env.client.workflow.getHandle(topupWorkflowId(ACCOUNT, key)).result()).toMatchObject({ orderId: null, status: 'new' });
  });
  expect(s.activities.paymentState).not.toHaveBeenCalled();
});

test('openings that arrive together run one at a time', async () => {
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
