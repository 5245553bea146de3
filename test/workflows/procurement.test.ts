import { WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { startDevTemporal, type DevTemporal } from '../../src/dev/temporal';
import {
  deliverManuallyUpdate,
  procurementStateQuery,
  procurementWorkflowId,
  refundUpdate,
  resumeUpdate,
  type OrderFacts,
  type ProcurementTiming,
} from '../../src/contracts/procurement-contract';
import { freePort } from '../helpers/harness';
import { timersOf as timers, uniqueId, until, workflowEnv, type WorkflowEnv } from './env';

// procurementWorkflow's state table with stubbed activities (spec 3.2, issue 17): partial rounds,
// the backoff between rounds, a round that fails outright, the round and time bounds into
// needs_attention once, a permanent refusal, resume, manual delivery, refund, an order already
// closed, refused support actions, support actions that wait their turn (behind the first step,
// behind the move to needs_attention, behind each other), and continue-as-new carrying the progress.
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
      if (o.fulfillmentStatus !== 'processing')
        return { ...facts(), outcome: 'not_procuring', obtained: 0, error: null };
      if (step === 'permanent' || step === 'transient')
        return { ...facts(), outcome: step, obtained: 0, error: `supplier said ${step}` };
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
    workflowId: procurementWorkflowId(orderId),
    taskQueue,
    args: [{ orderId, accountId: 'acct', externalOrderId: 'ext' }],
  });
}

const who = { actor: 'ops@example.com', reason: 'checked with the supplier' };

test.concurrent('partial rounds: every round asks for the rest under its own key, until all units are in', async () => {
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

test.concurrent(
  'the round bound moves the order to needs_attention once; resume gives a fresh attempt that delivers',
  async () => {
    const tq = env.taskQueue();
    const orderId = uniqueId('ord');
    const order = fakeOrder(2, [0, 0, 0, 2]);
    await env.withWorker(tq, order.activities, async () => {
      const handle = await start(env, tq, orderId);
      await waitForPhase(handle, 'needs_attention');
      expect(order.activities.markNeedsAttention).toHaveBeenCalledTimes(1);
      expect(await handle.query(procurementStateQuery)).toMatchObject({
        rounds: 3,
        roundsSinceResume: 3,
        remaining: 2,
      });
      const resumed = await handle.executeUpdate(resumeUpdate, { args: [who] });
      expect(resumed.supportActions).toEqual([expect.objectContaining({ action: 'resume', actor: who.actor })]);
      expect(await handle.result()).toMatchObject({ phase: 'delivered', rounds: 4, roundsSinceResume: 1 });
    });
    expect(order.activities.markNeedsAttention).toHaveBeenCalledTimes(1);
  },
);

test.concurrent(
  "a permanent refusal goes to needs_attention at once, with the supplier's error in the state",
  async () => {
    const tq = env.taskQueue();
    const order = fakeOrder(1, ['permanent']);
    await env.withWorker(tq, order.activities, async () => {
      const handle = await start(env, tq, uniqueId('ord'));
      await waitForPhase(handle, 'needs_attention');
      expect(await handle.query(procurementStateQuery)).toMatchObject({
        rounds: 1,
        lastSupplierError: 'supplier said permanent',
      });
      await handle.executeUpdate(refundUpdate, { args: [who] });
      expect(await handle.result()).toMatchObject({ phase: 'refunded' });
    });
  },
);

test.concurrent('support delivers the missing units by hand; a refund after that is refused', async () => {
  const tq = env.taskQueue();
  const order = fakeOrder(2, [1, 0, 0]);
  await env.withWorker(tq, order.activities, async () => {
    const handle = await start(env, tq, uniqueId('ord'));
    await waitForPhase(handle, 'needs_attention');
    expect(await handle.executeUpdate(deliverManuallyUpdate, { args: [{ ...who, batchId: 'batch_1' }] })).toMatchObject(
      { phase: 'delivered', fulfilledQuantity: 2 },
    );
    expect(await handle.result()).toMatchObject({ phase: 'delivered' });
    const late = await handle.executeUpdate(refundUpdate, { args: [who] }).catch((e) => e);
    expect(late).toBeInstanceOf(Error);
  });
  expect(order.activities.refundUndelivered).not.toHaveBeenCalled();
  expect(order.activities.deliverManually).toHaveBeenCalledWith(
    expect.objectContaining({ batchId: 'batch_1', actor: who.actor }),
  );
});

test.concurrent(
  'empty rounds back off from the base, doubling up to the cap; a round that obtains units starts again from the base',
  async () => {
    const tq = env.taskQueue();
    const order = fakeOrder(3, [0, 0, 1, 0], { ...TIMING, retryBaseSeconds: 0.5, retryCapSeconds: 1, maxRounds: 4 });
    await env.withWorker(tq, order.activities, async () => {
      const handle = await start(env, tq, uniqueId('ord'));
      await waitForPhase(handle, 'needs_attention');
      expect(await timers(handle)).toEqual([500, 1000, 500]);
      expect(await handle.query(procurementStateQuery)).toMatchObject({
        rounds: 4,
        emptyStreak: 1,
        fulfilledQuantity: 1,
        remaining: 2,
      });
      await handle.terminate('test done');
    });
  },
);

test.concurrent('a round that fails outright counts as an empty round, with its error in the state', async () => {
  const tq = env.taskQueue();
  const order = fakeOrder(1, [1]);
  let failed = false;
  const procureRound = jest.fn(async (req: { orderId: string; idempotencyKey: string }) => {
    if (!failed) {
      failed = true;
      throw ApplicationFailure.nonRetryable('supplier API unreachable', 'SupplierDown');
    }
    return order.activities.procureRound(req);
  });
  await env.withWorker(tq, { ...order.activities, procureRound }, async () => {
    const handle = await start(env, tq, uniqueId('ord'));
    expect(await handle.result()).toMatchObject({
      phase: 'delivered',
      rounds: 2,
      lastSupplierError: 'supplier API unreachable',
    });
  });
  expect(order.activities.markNeedsAttention).not.toHaveBeenCalled();
});

test.concurrent('the time bound moves an order to needs_attention even with rounds to spare', async () => {
  const tq = env.taskQueue();
  const order = fakeOrder(1, [], {
    ...TIMING,
    retryBaseSeconds: 0.5,
    retryCapSeconds: 0.5,
    maxRounds: 100,
    deadlineSeconds: 1.5,
  });
  await env.withWorker(tq, order.activities, async () => {
    const handle = await start(env, tq, uniqueId('ord'));
    await waitForPhase(handle, 'needs_attention');
    const state = await handle.query(procurementStateQuery);
    expect(state.rounds).toBeGreaterThanOrEqual(1);
    expect(state.rounds).toBeLessThanOrEqual(4);
    await handle.terminate('test done');
  });
  expect(order.activities.markNeedsAttention).toHaveBeenCalledTimes(1);
});

test.concurrent.each([
  ['delivered', { status: 'delivered', fulfillmentStatus: 'delivered' }],
  ['refunded', { status: 'refunded', fulfillmentStatus: 'refunded' }],
  ['closed', { status: 'expired', fulfillmentStatus: null }],
])('an order Postgres already shows %s is not procured: the workflow ends at once', async (phase, facts) => {
  const tq = env.taskQueue();
  const order = fakeOrder(1, [1]);
  Object.assign(order.o, facts);
  await env.withWorker(tq, order.activities, async () => {
    expect(await (await start(env, tq, uniqueId('ord'))).result()).toMatchObject({ phase, rounds: 0 });
  });
  expect(order.activities.procureRound).not.toHaveBeenCalled();
});

test.concurrent(
  'a support action sent while the order is being moved to needs_attention waits for it, then runs',
  async () => {
    const tq = env.taskQueue();
    const order = fakeOrder(1, [0, 0, 0, 1]);
    const log: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const markNeedsAttention = jest.fn(async () => {
      log.push('mark:start');
      await released;
      log.push('mark:end');
      return order.activities.markNeedsAttention();
    });
    const resumeProcurement = jest.fn(async () => {
      log.push('resume');
      return order.activities.resumeProcurement();
    });
    await env.withWorker(tq, { ...order.activities, markNeedsAttention, resumeProcurement }, async () => {
      const handle = await start(env, tq, uniqueId('ord'));
      await until(() => markNeedsAttention.mock.calls.length > 0);
      // Admitted (not refused as "not waiting"), though the workflow's phase is still procuring.
      const update = await handle.startUpdate(resumeUpdate, {
        args: [who],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      release();
      expect(await update.result()).toMatchObject({
        phase: 'procuring',
        supportActions: [expect.objectContaining({ action: 'resume' })],
      });
      expect(await handle.result()).toMatchObject({ phase: 'delivered', rounds: 4 });
    });
    expect(log).toEqual(['mark:start', 'mark:end', 'resume']);
  },
);

test.concurrent(
  'a support action sent before the first step waits for it, and runs if the order waits for support',
  async () => {
    const tq = env.taskQueue();
    const order = fakeOrder(1, [1]);
    order.o.fulfillmentStatus = 'needs_attention'; // support started this run, the order already waiting
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const beginProcurement = jest.fn(async () => {
      await released;
      return order.activities.beginProcurement();
    });
    await env.withWorker(tq, { ...order.activities, beginProcurement }, async () => {
      const handle = await start(env, tq, uniqueId('ord'));
      await until(() => beginProcurement.mock.calls.length > 0);
      const update = await handle.startUpdate(resumeUpdate, {
        args: [who],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      expect(order.activities.resumeProcurement).not.toHaveBeenCalled();
      release();
      await update.result();
      expect(await handle.result()).toMatchObject({ phase: 'delivered', rounds: 1 });
    });
    expect(order.activities.resumeProcurement).toHaveBeenCalledTimes(1);
    expect(order.activities.markNeedsAttention).not.toHaveBeenCalled();
  },
);

test.concurrent.each([
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

test.concurrent('two support actions sent together run one after the other', async () => {
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
    await Promise.all([
      handle.executeUpdate(resumeUpdate, { args: [who] }),
      handle.executeUpdate(resumeUpdate, { args: [who] }),
    ]);
    await handle.terminate('test done');
  });
  expect(maxInFlight).toBe(1);
});

// On a server of its own that suggests continue-as-new after a few events; started inside the
// test so it comes up while the other tests run.
test.concurrent(
  'a long procurement continues as new, carrying rounds and support actions, and still delivers',
  async () => {
    const server: DevTemporal = await startDevTemporal({
      port: await freePort(),
      uiPort: 0,
      namespace: 'default',
      dynamicConfig: ['limit.historyCount.suggestContinueAsNew=40'],
    });
    const small = await workflowEnv(server.address).catch(async (err) => {
      await server.stop();
      throw err;
    });
    try {
      const tq = small.taskQueue();
      const orderId = uniqueId('ord');
      const order = fakeOrder(1, [...new Array<number>(12).fill(0), 1], { ...TIMING, maxRounds: 12 });
      await small.withWorker(tq, order.activities, async () => {
        const handle = await start(small, tq, orderId);
        await waitForPhase(small.client.workflow.getHandle(procurementWorkflowId(orderId)), 'needs_attention');
        const latest = small.client.workflow.getHandle(procurementWorkflowId(orderId));
        await latest.executeUpdate(resumeUpdate, { args: [who] });
        expect(await latest.result()).toMatchObject({
          phase: 'delivered',
          rounds: 13,
          supportActions: [expect.objectContaining({ action: 'resume' })],
        });
        // The first run handed over to a new one.
        expect(
          (await small.client.workflow.getHandle(procurementWorkflowId(orderId), handle.firstExecutionRunId).describe())
            .status.name,
        ).toBe('CONTINUED_AS_NEW');
      });
      // Round keys stay distinct across runs: the supplier is never asked twice under one key.
      expect(new Set(order.keys).size).toBe(13);
    } finally {
      await small.close();
      await server.stop();
    }
  },
  120_000,
);

async function waitForPhase(
  handle: { query: (q: typeof procurementStateQuery) => Promise<{ phase: string }> },
  phase: string,
) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const state = await handle.query(procurementStateQuery).catch(() => undefined);
    if (state?.phase === phase) return;
    if (Date.now() > deadline) throw new Error(`phase ${phase} not reached (last ${state?.phase})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
