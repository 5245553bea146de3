import { WorkflowUpdateFailedError } from '@temporalio/client';
import { startDevTemporal, type DevTemporal } from '../../src/dev/temporal';
import {
  deliverManuallyUpdate,
  procurementStateQuery,
  procurementWorkflowId,
  refundUpdate,
  resumeUpdate,
  type OrderFacts,
  type ProcurementTiming,
} from '../../src/temporal/procurement';
import { freePort } from '../helpers/harness';
import { uniqueId, workflowEnv, type WorkflowEnv } from './env';

// procurementWorkflow's state table with stubbed activities (spec 3.2, issue 17): partial rounds,
// the round bound into needs_attention once, a permanent refusal, resume, manual delivery, refund,
// refused support actions, and continue-as-new carrying the progress.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const TIMING: ProcurementTiming = { retryBaseSeconds: 0, retryCapSeconds: 1, maxRounds: 3, deadlineSeconds: 60 };
type Step = number | 'permanent' | 'transient';

/** An order as Postgres would hold it, moved by the stubbed steps as the real ones move it. */
function fakeOrder(qty: number, steps: Step[], timing = TIMING) {
  const o: OrderFacts = { status: 'paid', fulfillmentStatus: 'processing', qty, fulfilledQuantity: 0 };
  const keys: string[] = [];
  const facts = () => ({ ...o });
  const deliverIfComplete = () => {
    if (o.fulfilledQuantity >= o.qty) Object.assign(o, { status: 'delivered', fulfillmentStatus: 'delivered' });
  };
  const activities = {
    beginProcurement: jest.fn(async () => ({ facts: facts(), timing })),
    procureRound: jest.fn(async ({ idempotencyKey }: { idempotencyKey: string }) => {
      keys.push(idempotencyKey);
      const step = steps.shift() ?? 0;
      if (o.fulfillmentStatus !== 'processing') return { ...facts(), outcome: 'not_procuring', obtained: 0, error: null };
      if (step === 'permanent' || step === 'transient') return { ...facts(), outcome: step, obtained: 0, error: `supplier said ${step}` };
      const obtained = Math.min(step, o.qty - o.fulfilledQuantity);
      o.fulfilledQuantity += obtained;
      deliverIfComplete();
      return { ...facts(), outcome: 'obtained', obtained, error: null };
    }),
    markNeedsAttention: jest.fn(async () => {
      if (o.fulfillmentStatus === 'processing') o.fulfillmentStatus = 'needs_attention';
      return facts();
    }),
    resumeProcurement: jest.fn(async () => {
      o.fulfillmentStatus = 'processing';
      return facts();
    }),
    deliverManually: jest.fn(async () => {
      o.fulfilledQuantity = o.qty;
      deliverIfComplete();
      return facts();
    }),
    refundUndelivered: jest.fn(async () => {
      Object.assign(o, { status: 'refunded', fulfillmentStatus: 'refunded' });
      return facts();
    }),
  };
  return { o, keys, activities };
}

async function start(e: WorkflowEnv, taskQueue: string, orderId: string) {
  return e.client.workflow.start('procurementWorkflow', {
    workflowId: procurementWorkflowId(orderId), taskQueue, args: [{ orderId, accountId: 'acct', externalOrderId: 'ext' }],
  });
}

const who = { actor: 'ops@example.com', reason: 'checked with the supplier' };

test('partial rounds: every round asks for the rest under its own key, until all units are in', async () => {
  const tq = env.taskQueue();
  const orderId = uniqueId('ord');
  const order = fakeOrder(3, [1, 1, 1], { ...TIMING, maxRounds: 5 });
  await env.withWorker(tq, order.activities, async () => {
    const handle = await start(env, tq, orderId);
    expect(await handle.result()).toMatchObject({ phase: 'delivered', rounds: 3, fulfilledQuantity: 3, remaining: 0 });
  });
  expect(new Set(order.keys).size).toBe(3);
  expect(order.activities.markNeedsAttention).not.toHaveBeenCalled();
});

test('the round bound moves the order to needs_attention once; resume gives a fresh attempt that delivers', async () => {
  const tq = env.taskQueue();
  const orderId = uniqueId('ord');
  const order = fakeOrder(2, [0, 0, 0, 2]);
  await env.withWorker(tq, order.activities, async () => {
    const handle = await start(env, tq, orderId);
    await waitForPhase(handle, 'needs_attention');
    expect(order.activities.markNeedsAttention).toHaveBeenCalledTimes(1);
    expect(await handle.query(procurementStateQuery)).toMatchObject({ rounds: 3, roundsSinceResume: 3, remaining: 2 });
    const resumed = await handle.executeUpdate(resumeUpdate, { args: [who] });
    expect(resumed.supportActions).toEqual([expect.objectContaining({ action: 'resume', actor: who.actor })]);
    expect(await handle.result()).toMatchObject({ phase: 'delivered', rounds: 4, roundsSinceResume: 1 });
  });
  expect(order.activities.markNeedsAttention).toHaveBeenCalledTimes(1);
});

test('a permanent refusal goes to needs_attention at once, with the supplier\'s error in the state', async () => {
  const tq = env.taskQueue();
  const order = fakeOrder(1, ['permanent']);
  await env.withWorker(tq, order.activities, async () => {
    const handle = await start(env, tq, uniqueId('ord'));
    await waitForPhase(handle, 'needs_attention');
    expect(await handle.query(procurementStateQuery)).toMatchObject({ rounds: 1, lastSupplierError: 'supplier said permanent' });
    await handle.executeUpdate(refundUpdate, { args: [who] });
    expect(await handle.result()).toMatchObject({ phase: 'refunded' });
  });
});

test('support delivers the missing units by hand; a refund after that is refused', async () => {
  const tq = env.taskQueue();
  const order = fakeOrder(2, [1, 0, 0]);
  await env.withWorker(tq, order.activities, async () => {
    const handle = await start(env, tq, uniqueId('ord'));
    await waitForPhase(handle, 'needs_attention');
    expect(await handle.executeUpdate(deliverManuallyUpdate, { args: [{ ...who, batchId: 'batch_1' }] })).toMatchObject({ phase: 'delivered', fulfilledQuantity: 2 });
    expect(await handle.result()).toMatchObject({ phase: 'delivered' });
    const late = await handle.executeUpdate(refundUpdate, { args: [who] }).catch((e) => e);
    expect(late).toBeInstanceOf(Error);
  });
  expect(order.activities.refundUndelivered).not.toHaveBeenCalled();
  expect(order.activities.deliverManually).toHaveBeenCalledWith(expect.objectContaining({ batchId: 'batch_1', actor: who.actor }));
});

test.each([
  ['without an actor', { actor: ' ', reason: 'x' }],
  ['while the order is still being procured', who],
])('a support action %s is refused (invalid_input) and changes nothing', async (_name, req) => {
  const tq = env.taskQueue();
  // A slow supplier: the order stays in procuring while support tries.
  const order = fakeOrder(1, [0, 0, 0], { ...TIMING, retryBaseSeconds: 5, retryCapSeconds: 5 });
  await env.withWorker(tq, order.activities, async () => {
    const handle = await start(env, tq, uniqueId('ord'));
    await waitForPhase(handle, 'procuring');
    const err = await handle.executeUpdate(resumeUpdate, { args: [req] }).catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(err.cause).toMatchObject({ type: 'invalid_input' });
    expect(order.activities.resumeProcurement).not.toHaveBeenCalled();
    await handle.terminate('test done');
  });
});

test('two support actions sent together run one after the other', async () => {
  const tq = env.taskQueue();
  const order = fakeOrder(1, [0, 0, 0]);
  let inFlight = 0;
  let maxInFlight = 0;
  const slowResume = jest.fn(async () => {
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await new Promise((r) => setTimeout(r, 100));
    inFlight--;
    order.o.fulfillmentStatus = 'needs_attention'; // the supplier is still out: back to waiting
    return { ...order.o };
  });
  await env.withWorker(tq, { ...order.activities, resumeProcurement: slowResume }, async () => {
    const handle = await start(env, tq, uniqueId('ord'));
    await waitForPhase(handle, 'needs_attention');
    await Promise.all([handle.executeUpdate(resumeUpdate, { args: [who] }), handle.executeUpdate(resumeUpdate, { args: [who] })]);
    await handle.terminate('test done');
  });
  expect(maxInFlight).toBe(1);
});

describe('continue-as-new (a server that suggests it after a few events)', () => {
  let server: DevTemporal;
  let small: WorkflowEnv;
  beforeAll(async () => {
    server = await startDevTemporal({
      port: await freePort(), uiPort: 0, namespace: 'default',
      dynamicConfig: ['limit.historyCount.suggestContinueAsNew=40'],
    });
    small = await workflowEnv(server.address);
  }, 120_000);
  afterAll(async () => {
    await small?.close();
    await server?.stop();
  });

  test('a long procurement continues as new, carrying rounds and support actions, and still delivers', async () => {
    const tq = small.taskQueue();
    const orderId = uniqueId('ord');
    const order = fakeOrder(1, [...new Array<number>(12).fill(0), 1], { ...TIMING, maxRounds: 12 });
    await small.withWorker(tq, order.activities, async () => {
      const handle = await start(small, tq, orderId);
      await waitForPhase(small.client.workflow.getHandle(procurementWorkflowId(orderId)), 'needs_attention');
      const latest = small.client.workflow.getHandle(procurementWorkflowId(orderId));
      await latest.executeUpdate(resumeUpdate, { args: [who] });
      expect(await latest.result()).toMatchObject({ phase: 'delivered', rounds: 13, supportActions: [expect.objectContaining({ action: 'resume' })] });
      // The first run handed over to a new one.
      expect((await small.client.workflow.getHandle(procurementWorkflowId(orderId), handle.firstExecutionRunId).describe()).status.name).toBe('CONTINUED_AS_NEW');
    });
    // Round keys stay distinct across runs: the supplier is never asked twice under one key.
    expect(new Set(order.keys).size).toBe(13);
  }, 120_000);
});

async function waitForPhase(handle: { query: (q: typeof procurementStateQuery) => Promise<{ phase: string }> }, phase: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const state = await handle.query(procurementStateQuery).catch(() => undefined);
    if (state?.phase === phase) return;
    if (Date.now() > deadline) throw new Error(`phase ${phase} not reached (last ${state?.phase})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

