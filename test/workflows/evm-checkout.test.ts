import {
  evmCheckoutScannedSignal,
  evmCheckoutWorkflowId,
  type EvmCheckoutTiming,
  type SettlePhase,
} from '../../src/contracts/evm-checkouts-contract';
import type { WorkflowHandle } from '@temporalio/client';
import { uniqueId, until, workflowEnv, type WorkflowEnv } from './env';

// evmCheckoutWorkflow with stubbed activities (issue 25): the phases it settles in (open within
// the window and the late watch, after it until the address watch ends, then one closing step),
// the order's workflow told once the checkout is paid, a scan failing without failing the watch,
// a transfer still short of its confirmations keeping the watch open, and a checkout whose order
// never committed closing once its window is over.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const TIMING: EvmCheckoutTiming = {
  syncSeconds: 1,
  windowSeconds: 2,
  lateWatchSeconds: 2,
  latePollSeconds: 1,
  addressWatchSeconds: 2,
  addressPollSeconds: 1,
};

function start(taskQueue: string, timing = TIMING) {
  const depositIndex = Math.floor(Math.random() * 1e9);
  return env.client.workflow.execute('evmCheckoutWorkflow', {
    workflowId: evmCheckoutWorkflowId(uniqueId('ord'), depositIndex),
    taskQueue,
    args: [{ depositIndex, timing }],
  });
}

test.concurrent(
  'settles open through the window and the late watch, after until the address watch ends, then closes; a failing scan fails nothing',
  async () => {
    const q = env.taskQueue();
    const phases: SettlePhase[] = [];
    let scans = 0;
    let notified = 0;
    // The address watch outlasts a scan and a settle on a loaded machine, so some step falls in it.
    const result = await env.withWorker(
      q,
      {
        scanEvmCheckout: async () => {
          if (++scans === 2) throw new Error('no node answered');
          return { unavailable: [] };
        },
        settleEvmCheckout: async ({ phase }: { phase: SettlePhase }) => {
          phases.push(phase);
          const paid = phases.length >= 3;
          return {
            state: phase === 'closing' ? 'closed' : paid ? 'paid' : 'pending',
            notify: phases.length === 3,
            waiting: 0,
            orderId: 'ord_1',
          };
        },
        notifyEvmCheckoutPaid: async () => void notified++,
      },
      () => start(q, { ...TIMING, addressWatchSeconds: 6 }),
    );
    expect(result).toMatchObject({ state: 'closed', lastError: null });
    expect(phases[0]).toBe('open');
    expect(phases.at(-1)).toBe('closing');
    expect(phases.filter((p) => p === 'after').length).toBeGreaterThanOrEqual(1);
    // Phases only move forward.
    const order = ['open', 'after', 'closing'];
    expect(phases.every((p, i) => i === 0 || order.indexOf(p) >= order.indexOf(phases[i - 1]))).toBe(true);
    expect(notified).toBe(1);
  },
  60_000,
);

test.concurrent(
  'a transfer waiting for its confirmations keeps the watch open past its end',
  async () => {
    const q = env.taskQueue();
    let settles = 0;
    const short: EvmCheckoutTiming = { ...TIMING, windowSeconds: 1, lateWatchSeconds: 0, addressWatchSeconds: 0 };
    const startedAt = Date.now();
    await env.withWorker(
      q,
      {
        scanEvmCheckout: async () => ({ unavailable: [] }),
        settleEvmCheckout: async ({ phase }: { phase: SettlePhase }) => {
          settles++;
          const waiting = Date.now() - startedAt < 4000 ? 1 : 0;
          return { state: phase === 'closing' ? 'closed' : 'pending', notify: false, waiting, orderId: 'ord_2' };
        },
        notifyEvmCheckoutPaid: async () => undefined,
      },
      () => start(q, short),
    );
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(4000);
    expect(settles).toBeGreaterThanOrEqual(3);
  },
  60_000,
);

test.concurrent(
  'a checkout whose order never committed closes once its window is over',
  async () => {
    const q = env.taskQueue();
    const phases: SettlePhase[] = [];
    const long: EvmCheckoutTiming = { ...TIMING, lateWatchSeconds: 3600, addressWatchSeconds: 3600 };
    const result = await env.withWorker(
      q,
      {
        scanEvmCheckout: async () => ({ unavailable: [] }),
        settleEvmCheckout: async ({ phase }: { phase: SettlePhase }) => {
          phases.push(phase);
          return { state: phase === 'closing' ? 'closed' : 'pending', notify: false, waiting: 0, orderId: null };
        },
        notifyEvmCheckoutPaid: async () => undefined,
      },
      () => start(q, long),
    );
    expect(result.state).toBe('closed');
    expect(phases.at(-1)).toBe('closing');
    expect(phases.length).toBeLessThan(10);
  },
  60_000,
);

/**
 * A watch that stays pending with `timing`, its settles counted, running `body` with its handle
 * (terminated afterwards).
 */
async function pendingWatch(
  timing: EvmCheckoutTiming,
  body: (handle: WorkflowHandle, settles: () => number) => Promise<void>,
): Promise<void> {
  const q = env.taskQueue();
  let settles = 0;
  await env.withWorker(
    q,
    {
      scanEvmCheckout: async () => ({ unavailable: [] }),
      settleEvmCheckout: async () => {
        settles++;
        return { state: 'pending', notify: false, waiting: 0, orderId: 'ord_pending' };
      },
      notifyEvmCheckoutPaid: async () => undefined,
    },
    async () => {
      const depositIndex = Math.floor(Math.random() * 1e9);
      const handle = await env.client.workflow.start('evmCheckoutWorkflow', {
        workflowId: evmCheckoutWorkflowId(uniqueId('ord'), depositIndex),
        taskQueue: q,
        args: [{ depositIndex, timing }],
      });
      try {
        await body(handle, () => settles);
      } finally {
        await handle.terminate('test done');
      }
    },
  );
}

test.concurrent(
  "the chain scanner's signal wakes the watch to settle at once, not at its next sync",
  () =>
    pendingWatch({ ...TIMING, syncSeconds: 3600, windowSeconds: 7200 }, async (handle, settles) => {
      await until(() => settles() === 1, 'the first step');
      await handle.signal(evmCheckoutScannedSignal);
      await until(() => settles() === 2, 'a step on the signal');
      await handle.signal(evmCheckoutScannedSignal);
      await until(() => settles() === 3, 'another');
    }),
  60_000,
);

test.concurrent(
  'with a fallback cadence the watch counts on its own only that often, though the scanners read every second',
  () =>
    pendingWatch({ ...TIMING, syncSeconds: 1, fallbackSeconds: 3600, windowSeconds: 7200 }, async (handle, settles) => {
      await until(() => settles() === 1, 'the first step');
      // Three sync periods: a watch counting at the sync cadence would have stepped again.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(settles()).toBe(1);
      await handle.signal(evmCheckoutScannedSignal);
      await until(() => settles() === 2, 'a step on the signal');
    }),
  60_000,
);
