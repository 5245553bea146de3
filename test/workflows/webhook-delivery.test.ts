import { temporal } from '@temporalio/proto';
import {
  deliveryWorkflowId,
  retryNowSignal,
  type DeliveryAttemptInput,
  type DeliveryOutcome,
} from '../../src/contracts/webhooks-contract';
import { keepHistory, uniqueId, workflowEnv, type WorkflowEnv } from './env';

// webhookDeliveryWorkflow's state table with a stubbed attempt (spec 6, issue 17): the backoff
// schedule, the attempt budget, a manual retry that cuts the wait and grants a fresh budget (and
// one that arrives during an attempt, even the attempt that ends the delivery), a reconfigured
// webhook read by the next attempt, and the endings (succeeded, cancelled by a cleared webhook, gone).
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const input = (deliveryId: string, over: Record<string, number> = {}) => ({
  deliveryId,
  maxAttempts: 4,
  retryBaseSeconds: 1,
  retryCapSeconds: 2,
  timeoutMs: 1000,
  ...over,
});

/** An attempt stub answering the scripted outcomes in turn, counting attempts like the delivery row. */
function attempts(script: DeliveryOutcome[]) {
  let n = 0;
  return jest.fn(async (i: DeliveryAttemptInput) => {
    n++;
    const outcome = script.shift() ?? 'retrying';
    const final = outcome === 'retrying' && i.retryInSeconds === null ? 'failed' : outcome;
    return {
      outcome: final,
      attempts: n,
      statusCode: final === 'succeeded' ? 200 : 500,
      error: final === 'succeeded' ? null : 'HTTP 500',
    };
  });
}

async function timers(workflowId: string): Promise<number[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_STARTED)
    .map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds));
}

test.concurrent(
  'failures back off 1 s, 2 s, then the cap (2 s); the last attempt of the budget fails the delivery',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('dlv');
    const attemptDelivery = attempts([]);
    await env.withWorker(tq, { attemptDelivery }, async () => {
      const handle = await env.client.workflow.start('webhookDeliveryWorkflow', {
        workflowId: deliveryWorkflowId(id),
        taskQueue: tq,
        args: [input(id)],
      });
      expect(await handle.result()).toEqual({ outcome: 'failed', attempts: 4 });
    });
    expect(attemptDelivery.mock.calls.map(([i]) => i.retryInSeconds)).toEqual([1, 2, 2, null]);
    expect(await timers(deliveryWorkflowId(id))).toEqual([1, 2, 2]);
  },
);

test.concurrent('a success ends the delivery at once', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('dlv');
  const attemptDelivery = attempts(['retrying', 'succeeded']);
  await env.withWorker(tq, { attemptDelivery }, async () => {
    const handle = await env.client.workflow.start('webhookDeliveryWorkflow', {
      workflowId: deliveryWorkflowId(id),
      taskQueue: tq,
      args: [input(id)],
    });
    expect(await handle.result()).toEqual({ outcome: 'succeeded', attempts: 2 });
  });
});

test.concurrent.each<[DeliveryOutcome]>([['cancelled'], ['gone']])(
  'an attempt that finds the delivery %s ends it',
  async (outcome) => {
    const tq = env.taskQueue();
    const id = uniqueId('dlv');
    await env.withWorker(tq, { attemptDelivery: attempts([outcome]) }, async () => {
      const handle = await env.client.workflow.start('webhookDeliveryWorkflow', {
        workflowId: deliveryWorkflowId(id),
        taskQueue: tq,
        args: [input(id)],
      });
      expect(await handle.result()).toEqual({ outcome, attempts: 1 });
    });
  },
);

test.concurrent(
  'a manual retry cuts a long wait short and grants a fresh budget',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('dlv');
    const attemptDelivery = attempts(['retrying', 'retrying', 'succeeded']);
    await env.withWorker(tq, { attemptDelivery }, async () => {
      const handle = await env.client.workflow.start('webhookDeliveryWorkflow', {
        workflowId: deliveryWorkflowId(id),
        taskQueue: tq,
        args: [input(id, { maxAttempts: 2, retryBaseSeconds: 3600, retryCapSeconds: 3600 })],
      });
      const waitFor = async (n: number) => {
        while (attemptDelivery.mock.calls.length < n) await new Promise((r) => setTimeout(r, 50));
      };
      // A manual retry is for a delivery waiting out its backoff: signal once the first attempt's
      // outcome is recorded and its timer started (not while the attempt is still in flight).
      const waitingOnTimer = async () => {
        for (;;) {
          const { events } = await handle.fetchHistory();
          if (events?.some((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_STARTED)) return;
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await waitFor(1);
      await waitingOnTimer();
      await handle.signal(retryNowSignal);
      await waitFor(2);
      // The budget started again: the second attempt is the first of a new budget of two, so it
      // still schedules a retry; a third (manual) retry then succeeds.
      expect(attemptDelivery.mock.calls[1][0].retryInSeconds).toBe(3600);
      await handle.signal(retryNowSignal);
      expect(await handle.result()).toEqual({ outcome: 'succeeded', attempts: 3 });
    });
  },
  60_000,
);

/**
 * A delivery whose first attempt ends `first` while a manual retry arrives during it; the second
 * attempt succeeds. Answers the workflow's result and the attempt stub.
 */
async function retriedDuringFirstAttempt(id: string, first: DeliveryOutcome, over: Record<string, number> = {}) {
  const tq = env.taskQueue();
  let signalled!: () => void;
  const retried = new Promise<void>((r) => (signalled = r));
  const scripted = attempts([first, 'succeeded']);
  const attemptDelivery = jest.fn(async (i: DeliveryAttemptInput) => {
    if (attemptDelivery.mock.calls.length === 1) await retried;
    return scripted(i);
  });
  const result = await env.withWorker(tq, { attemptDelivery }, async () => {
    const handle = await env.client.workflow.start('webhookDeliveryWorkflow', {
      workflowId: deliveryWorkflowId(id),
      taskQueue: tq,
      args: [input(id, over)],
    });
    while (attemptDelivery.mock.calls.length === 0) await new Promise((r) => setTimeout(r, 50));
    await handle.signal(retryNowSignal);
    signalled();
    const ended = await handle.result();
    await keepHistory('webhookDeliveryWorkflow', handle.workflowId, await handle.fetchHistory());
    return ended;
  });
  return { result, attemptDelivery };
}

test.concurrent(
  'a manual retry that arrives while an attempt is in flight sends again at once, without waiting out the backoff',
  async () => {
    const id = uniqueId('dlv');
    const { result } = await retriedDuringFirstAttempt(id, 'retrying', {
      maxAttempts: 3,
      retryBaseSeconds: 3600,
      retryCapSeconds: 3600,
    });
    expect(result).toEqual({ outcome: 'succeeded', attempts: 2 });
    expect(await timers(deliveryWorkflowId(id))).toEqual([]);
  },
);

test.concurrent.each<[DeliveryOutcome]>([['succeeded'], ['cancelled']])(
  'a manual retry that arrives while the attempt that ends the delivery (%s) is in flight sends again',
  async (ending) => {
    const { result, attemptDelivery } = await retriedDuringFirstAttempt(uniqueId('dlv'), ending);
    expect(result).toEqual({ outcome: 'succeeded', attempts: 2 });
    expect(attemptDelivery).toHaveBeenCalledTimes(2);
  },
);

test.concurrent(
  'a webhook reconfigured between attempts is read by the next attempt: the workflow holds only the delivery id',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('dlv');
    // The account's endpoint as Postgres holds it; the attempt reads it each time, as the real one does.
    let endpoint = 'https://old.example.com/hook';
    const used: string[] = [];
    const scripted = attempts(['retrying', 'succeeded']);
    const attemptDelivery = jest.fn(async (i: DeliveryAttemptInput) => {
      used.push(endpoint);
      if (used.length === 1) endpoint = 'https://new.example.com/hook'; // reconfigured while the delivery waits
      return scripted(i);
    });
    await env.withWorker(tq, { attemptDelivery }, async () => {
      const handle = await env.client.workflow.start('webhookDeliveryWorkflow', {
        workflowId: deliveryWorkflowId(id),
        taskQueue: tq,
        args: [input(id)],
      });
      expect(await handle.result()).toEqual({ outcome: 'succeeded', attempts: 2 });
    });
    expect(used).toEqual(['https://old.example.com/hook', 'https://new.example.com/hook']);
    expect(attemptDelivery.mock.calls.map(([i]) => i)).toEqual([
      { deliveryId: id, retryInSeconds: 1 },
      { deliveryId: id, retryInSeconds: 2 },
    ]);
  },
);
