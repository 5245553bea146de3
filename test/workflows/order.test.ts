import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { orderStateQuery, orderWorkflowId, placeOrderUpdate, type Placement, type PlaceOrderRequest } from '../../src/temporal/orders';
import { paymentNotifiedSignal, type PaymentTiming } from '../../src/temporal/payments';
import { uniqueId, workflowEnv, type WorkflowEnv } from './env';

// orderWorkflow's state table with stubbed activities (issue 17): placement (and its races),
// rejection, payment by callback and by status sync, expiry, late payment, checkout repair,
// the hand-off of a paid direct-code order, and an unexpected placement failure.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const TIMING: PaymentTiming = { syncSeconds: 1, lateWatchSeconds: 3, latePollSeconds: 1 };
const ACCOUNT = '00000000-0000-4000-8000-000000000001';

const request = (over: Partial<PlaceOrderRequest> = {}): PlaceOrderRequest => ({
  productId: 'prod_x', qty: 1, payment: 'balance', source: 'rest', placementId: uniqueId('req'), ...over,
});

function place(taskQueue: string, externalOrderId: string, req: PlaceOrderRequest, timing?: PaymentTiming): Promise<Placement> {
  return env.client.workflow.executeUpdateWithStart(placeOrderUpdate, {
    args: [req],
    updateId: req.placementId,
    startWorkflowOperation: new WithStartWorkflowOperation('orderWorkflow', {
      workflowId: orderWorkflowId(ACCOUNT, externalOrderId),
      taskQueue,
      args: [{ accountId: ACCOUNT, externalOrderId, timing }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });
}

const result = (externalOrderId: string) => env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, externalOrderId)).result();

/** The workflow's result and, through the `state` query (answered for a closed run too), its payment loop. */
async function outcome(externalOrderId: string) {
  const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, externalOrderId));
  const state = await handle.result();
  return { ...state, payment: (await handle.query(orderStateQuery)).payment };
}

/** Payment activities for an intent order whose window closes `windowMs` from now. */
function paymentStubs(windowMs: number, paidBySync = false) {
  let expiresAt = 0;
  let settled = false;
  return {
    paymentState: jest.fn(async () => {
      expiresAt ||= Date.now() + windowMs;
      return { status: settled ? 'delivered' : 'pending', checkoutId: 'chk', expiresAt, kind: 'purchase' };
    }),
    syncPayment: jest.fn(async () => (paidBySync ? 'paid' : 'pending')),
    settlePayment: jest.fn(async () => {
      if (settled) return 'already_settled';
      settled = true;
      return 'settled';
    }),
    expirePayment: jest.fn(async () => 'expired'),
  };
}

test('a balance placement is answered by the update and the workflow ends delivered, without any other activity', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('bal');
  const placeOrder = jest.fn(async () => ({ outcome: 'placed', orderId: 'ord_1', reused: false, status: 'delivered', fulfillmentStatus: null }));
  const orderStatus = jest.fn();
  await env.withWorker(tq, { placeOrder, orderStatus }, async () => {
    expect(await place(tq, id, request())).toEqual({ outcome: 'placed', orderId: 'ord_1', reused: false, status: 'delivered', fulfillmentStatus: null });
    expect(await result(id)).toMatchObject({ orderId: 'ord_1', status: 'delivered', placementAttempts: 1, lastError: null });
  });
  expect(placeOrder).toHaveBeenCalledTimes(1);
  expect(placeOrder.mock.calls[0]).toEqual([expect.objectContaining({ accountId: ACCOUNT, externalOrderId: id, productId: 'prod_x', qty: 1, payment: 'balance' })]);
  expect(orderStatus).not.toHaveBeenCalled();
});

test('a rejected placement is the update\'s answer; the workflow ends as rejected', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('rej');
  const rejected = { outcome: 'rejected', rejection: { code: 'insufficient_balance', message: 'too little' } };
  await env.withWorker(tq, { placeOrder: jest.fn(async () => rejected), orderStatus: jest.fn() }, async () => {
    expect(await place(tq, id, request())).toEqual(rejected);
    expect(await result(id)).toMatchObject({ orderId: null, status: 'rejected', lastError: 'insufficient_balance' });
  });
});

test('concurrent placements of one externalOrderId meet in one workflow and are placed one at a time', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('race');
  let inFlight = 0;
  let maxInFlight = 0;
  let placed = false;
  // An intent order keeps its run open (waiting for payment), so every request meets this run.
  const placeOrder = jest.fn(async () => {
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await new Promise((r) => setTimeout(r, 50));
    inFlight--;
    const reused = placed;
    placed = true;
    return { outcome: 'placed', orderId: 'ord_race', reused, status: 'pending', fulfillmentStatus: null };
  });
  const stubs = paymentStubs(30_000);
  await env.withWorker(tq, { placeOrder, orderStatus: jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null })), ...stubs }, async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => place(tq, id, request({ payment: 'intent' }), TIMING)));
    expect(new Set(answers.map((p) => (p as { orderId: string }).orderId))).toEqual(new Set(['ord_race']));
    expect(answers.filter((p) => p.outcome === 'placed' && !p.reused)).toHaveLength(1);
    await env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id)).signal(paymentNotifiedSignal, { orderId: 'ord_race', status: 'paid' });
    expect(await result(id)).toMatchObject({ placementAttempts: 6, status: 'delivered' });
  });
  expect(maxInFlight).toBe(1);
});

test('the same placement id twice is answered once (a retry after a lost reply)', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('dup');
  const placeOrder = jest.fn(async () => ({ outcome: 'placed', orderId: 'ord_d', reused: false, status: 'pending', fulfillmentStatus: null }));
  const stubs = paymentStubs(5_000);
  await env.withWorker(tq, { placeOrder, orderStatus: jest.fn(async () => ({ status: 'expired', fulfillmentStatus: null })), ...stubs }, async () => {
    const req = request({ payment: 'intent' });
    const [a, b] = [await place(tq, id, req, TIMING), await place(tq, id, req, TIMING)];
    expect(a).toEqual(b);
  });
  expect(placeOrder).toHaveBeenCalledTimes(1);
});

test.each([
  ['the provider\'s callback (signal)', false, 'callback'],
  ['the status sync', true, 'status_sync'],
])('an intent order paid within its window, confirmed by %s, is settled once and ends delivered', async (_name, paidBySync, path) => {
  const tq = env.taskQueue();
  const id = uniqueId('paid');
  const stubs = paymentStubs(20_000, paidBySync);
  const placeOrder = jest.fn(async () => ({ outcome: 'placed', orderId: 'ord_p', reused: false, status: 'pending', fulfillmentStatus: null }));
  const orderStatus = jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null }));
  await env.withWorker(tq, { placeOrder, orderStatus, ...stubs }, async () => {
    await place(tq, id, request({ payment: 'intent' }), TIMING);
    const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id));
    if (!paidBySync) await handle.signal(paymentNotifiedSignal, { orderId: 'ord_p', status: 'paid' });
    expect(await outcome(id)).toMatchObject({ orderId: 'ord_p', status: 'delivered', payment: { status: 'paid' } });
  });
  expect(stubs.settlePayment).toHaveBeenCalledTimes(1);
  expect(stubs.settlePayment.mock.calls[0]).toEqual(['ord_p', path]);
  expect(stubs.expirePayment).not.toHaveBeenCalled();
});

test('an intent order left unpaid expires after its window, asking the provider at most once per sync interval', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('exp');
  const stubs = paymentStubs(2_500);
  const placeOrder = jest.fn(async () => ({ outcome: 'placed', orderId: 'ord_e', reused: false, status: 'pending', fulfillmentStatus: null }));
  const orderStatus = jest.fn(async () => ({ status: 'expired', fulfillmentStatus: null }));
  const started = Date.now();
  await env.withWorker(tq, { placeOrder, orderStatus, ...stubs }, async () => {
    await place(tq, id, request({ payment: 'intent' }), { ...TIMING, lateWatchSeconds: 0 });
    expect(await outcome(id)).toMatchObject({ orderId: 'ord_e', status: 'expired', payment: { status: 'expired' } });
  });
  expect(stubs.expirePayment).toHaveBeenCalledTimes(1);
  expect(stubs.settlePayment).not.toHaveBeenCalled();
  // About one sync per second of the 2.5 s window: never more often than the interval allows.
  const elapsedS = (Date.now() - started) / 1000;
  expect(stubs.syncPayment.mock.calls.length).toBeGreaterThanOrEqual(2);
  expect(stubs.syncPayment.mock.calls.length).toBeLessThanOrEqual(Math.ceil(elapsedS) + 1);
});

test('a payment that arrives after expiry is still settled, as late', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('late');
  const stubs = paymentStubs(1_000);
  const placeOrder = jest.fn(async () => ({ outcome: 'placed', orderId: 'ord_l', reused: false, status: 'pending', fulfillmentStatus: null }));
  const orderStatus = jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null }));
  await env.withWorker(tq, { placeOrder, orderStatus, ...stubs }, async () => {
    await place(tq, id, request({ payment: 'intent' }), { ...TIMING, lateWatchSeconds: 30 });
    const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id));
    await new Promise((r) => setTimeout(r, 2_000));
    expect(stubs.expirePayment).toHaveBeenCalledTimes(1);
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_l', status: 'paid' });
    expect(await outcome(id)).toMatchObject({ status: 'delivered', payment: { status: 'paid' } });
  });
  expect(stubs.settlePayment.mock.calls).toEqual([['ord_l', 'late']]);
});

test('a replay in intent mode of a pending order reaches the placement again (the checkout repair of rule 4)', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('repair');
  const stubs = paymentStubs(10_000);
  let calls = 0;
  const placeOrder = jest.fn(async () => ({ outcome: 'placed', orderId: 'ord_r', reused: calls++ > 0, status: 'pending', fulfillmentStatus: null }));
  await env.withWorker(tq, { placeOrder, orderStatus: jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null })), ...stubs }, async () => {
    expect(await place(tq, id, request({ payment: 'intent' }), TIMING)).toMatchObject({ reused: false });
    expect(await place(tq, id, request({ payment: 'intent' }), TIMING)).toMatchObject({ orderId: 'ord_r', reused: true });
    await env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id)).signal(paymentNotifiedSignal, { orderId: 'ord_r', status: 'paid' });
    await result(id);
  });
  expect(placeOrder).toHaveBeenCalledTimes(2);
});

test('a placement that keeps finding the database unavailable fails the update as a retryable service_unavailable', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('pgdown');
  // What the safe-failure interceptor makes of a database outage (src/temporal/safe-failures.ts).
  const placeOrder = jest.fn(async () => {
    throw ApplicationFailure.retryable('The database is unavailable; retry shortly', 'service_unavailable');
  });
  await env.withWorker(tq, { placeOrder, orderStatus: jest.fn() }, async () => {
    const err = await place(tq, id, request()).catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(err.cause).toMatchObject({ type: 'service_unavailable', message: 'The database is unavailable; retry shortly' });
  });
  expect(placeOrder.mock.calls.length).toBe(5);
});

test('an unexpected placement failure is retried, then fails the update (not the workflow) as internal_error', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('boom');
  const placeOrder = jest.fn(async () => {
    throw new Error('database went away');
  });
  await env.withWorker(tq, { placeOrder, orderStatus: jest.fn() }, async () => {
    const err = await place(tq, id, request()).catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(err.cause).toMatchObject({ type: 'internal_error' });
    expect(await result(id)).toMatchObject({ orderId: null, status: 'rejected', lastError: expect.stringMatching(/database went away/) });
  });
  expect(placeOrder.mock.calls.length).toBe(5);
}, 60_000);
