import pino from 'pino';
import type { Orm } from '../../src/db/orm';
import { WorkerWatch } from '../../src/services/worker-watch';

// The API's view of the workers: a placement that finds "no worker" reads the heartbeat rows again
// before it is refused. A read already under way may have begun before a worker wrote its row, so
// the view a caller waits for comes from a read that began after the call. The rows here are the
// test's: each read takes the next answer the test gives it.
const answers: ((live: number) => void)[] = [];
jest.mock('../../src/db/worker-heartbeats-store', () => ({
  liveWorkers: () =>
    new Promise((resolve) => answers.push((live: number) => resolve({ live, scheduleToStartMs: null }))),
}));

const watch = () =>
  new WorkerWatch({
    orm: { em: { fork: () => ({}) } } as unknown as Orm,
    taskQueue: 'q',
    staleMs: 1500,
    everyMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
const tick = () => new Promise((r) => setImmediate(r));

test('a refresh while a read is under way waits for a read that begins after it, one for every such caller', async () => {
  const w = watch();
  const older = w.refresh(); // e.g. the timer's, begun before the worker wrote its row
  await tick();
  expect(answers).toHaveLength(1);

  let fresh = false;
  const callers = [w.refresh(), w.refresh()].map((p) => p.then(() => (fresh = true)));
  answers.shift()!(0);
  await older;
  expect(w.current).toMatchObject({ known: true, live: 0 });
  expect(fresh).toBe(false);

  await tick();
  expect(answers).toHaveLength(1); // one more read, shared by both callers
  answers.shift()!(1);
  await Promise.all(callers);
  expect(w.current).toMatchObject({ known: true, live: 1 });
});

test('with no read under way, a refresh reads at once', async () => {
  const w = watch();
  const done = w.refresh();
  await tick();
  expect(answers).toHaveLength(1);
  answers.shift()!(2);
  await done;
  expect(w.current.live).toBe(2);
});
