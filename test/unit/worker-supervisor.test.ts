import type { NativeConnection, Worker } from '@temporalio/worker';
import { createLogger } from '../../src/logger';
import { WorkerSupervisor } from '../../src/temporal/worker-supervisor';

// Issue 11 item 3: the supervisor's rules with stand-in workers (the real core failure and the
// real worker process are in test/api/worker-failure.test.ts).

interface FakeWorker {
  run(): Promise<void>;
  shutdown(): void;
  getState(): string;
}

function fakeWorker(outcome: 'fail' | 'run-until-shutdown', failAfterMs = 5): FakeWorker {
  let state = 'INITIALIZED';
  let stop!: () => void;
  return {
    run() {
      state = 'RUNNING';
      if (outcome === 'fail')
        return new Promise((_, reject) =>
          setTimeout(() => ((state = 'FAILED'), reject(new Error('core said no \ud800'))), failAfterMs),
        );
      return new Promise<void>((resolve) => (stop = () => ((state = 'STOPPED'), resolve())));
    },
    shutdown: () => stop(),
    getState: () => state,
  };
}

const connection = () => ({ close: async () => undefined }) as unknown as NativeConnection;
const quiet = createLogger('silent');

test('a worker that keeps failing is restarted with growing backoff, then given up after the limit, once', async () => {
  const startedAt: number[] = [];
  const giveUps: unknown[] = [];
  const supervisor = new WorkerSupervisor({
    logger: quiet,
    minBackoffMs: 20,
    maxBackoffMs: 80,
    maxConsecutiveFailures: 4,
    onGiveUp: (err) => giveUps.push(err),
    create: async () => {
      startedAt.push(Date.now());
      return { worker: fakeWorker('fail') as unknown as Worker, connection: connection() };
    },
  });
  await supervisor.start();
  await new Promise((r) => setTimeout(r, 600));
  expect(startedAt).toHaveLength(4);
  const gaps = startedAt.slice(1).map((t, i) => t - startedAt[i]);
  // 20, 40, 80 ms of backoff (plus the 5 ms run): each wait at least the one before.
  expect(gaps[0]).toBeGreaterThanOrEqual(20);
  expect(gaps[2]).toBeGreaterThanOrEqual(80);
  expect(giveUps).toHaveLength(1);
  expect(supervisor.health()).toMatchObject({ phase: 'gave_up', restarts: 3 });
  // The error text kept for /healthz is made safe (no lone surrogate).
  expect(supervisor.health().lastError).toBe('Error: core said no \ufffd');
});

test('a worker that cannot be created is retried until it can, and never given up without a limit', async () => {
  let attempts = 0;
  const supervisor = new WorkerSupervisor({
    logger: quiet,
    minBackoffMs: 5,
    maxBackoffMs: 10,
    create: async () => {
      attempts++;
      if (attempts < 6) throw new Error('connect ECONNREFUSED 127.0.0.1:7233');
      return { worker: fakeWorker('run-until-shutdown') as unknown as Worker, connection: connection() };
    },
  });
  await supervisor.start();
  expect(attempts).toBe(6);
  expect(supervisor.health()).toMatchObject({ phase: 'running', restarts: 5 });
  await supervisor.stop();
  expect(supervisor.health().phase).toBe('stopped');
});

test('stop() during a backoff wait ends the loop at once, without another start', async () => {
  let attempts = 0;
  const supervisor = new WorkerSupervisor({
    logger: quiet,
    minBackoffMs: 60_000,
    create: async () => {
      attempts++;
      throw new Error('down');
    },
  });
  const started = supervisor.start();
  await new Promise((r) => setTimeout(r, 50));
  expect(supervisor.health().phase).toBe('restarting');
  const t = Date.now();
  await supervisor.stop();
  await started;
  expect(Date.now() - t).toBeLessThan(1000);
  expect(attempts).toBe(1);
  expect(supervisor.health().phase).toBe('stopped');
});

test('each worker polls only once beforePolling has resolved, at its first start and after a restart, with the phase running', async () => {
  const events: string[] = [];
  let creations = 0;
  let finish!: () => void;
  const announced = new Promise<void>((r) => (finish = r));
  const supervisor = new WorkerSupervisor({
    logger: quiet,
    minBackoffMs: 10,
    create: async () => {
      const n = ++creations;
      const inner = fakeWorker(n === 1 ? 'fail' : 'run-until-shutdown');
      const worker = {
        ...inner,
        run: () => {
          events.push(`run ${n}`);
          return inner.run();
        },
      };
      return { worker: worker as unknown as Worker, connection: connection() };
    },
    beforePolling: async () => {
      events.push(`announce ${creations} (${supervisor.health().phase})`);
      await new Promise((r) => setTimeout(r, 20));
      if (creations === 2) finish();
    },
  });
  await supervisor.start();
  await announced;
  await new Promise((r) => setTimeout(r, 50));
  await supervisor.stop();
  expect(events).toEqual(['announce 1 (running)', 'run 1', 'announce 2 (running)', 'run 2']);
});
