import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { startStoppablePostgres, type StoppablePostgres } from '../helpers/stoppable-postgres';

// Issue 27 item 4: outage logging. Postgres (a server of this test's own) is really stopped for
// 15 s while clients keep calling the API: every request that needs it is a retryable 503, and the
// log has a few lines, not one per request: one error when the database goes down, warnings
// sampled (the first, then one per 10 s with how many were deferred since), one info when it is
// back. The API process only, so that what is counted is the request path's lines.
const OUTAGE_MS = 15_000;
const CLIENTS = 8;
let pg: StoppablePostgres;
let h: Harness;

beforeAll(async () => {
  pg = await startStoppablePostgres();
  h = await startHarness({}, { databaseUrl: pg.url, worker: false });
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await pg?.close();
});

type Call = [fields: Record<string, unknown>, message: string];

test('Postgres stopped for 15 s under load: hundreds of 503s, a handful of lines; one error, sampled warnings, one info', async () => {
  const { apiKey } = await h.account('10.00');
  const calls: { level: string; call: Call }[] = [];
  for (const level of ['error', 'warn', 'info'] as const) {
    const original = h.services.logger[level].bind(h.services.logger);
    jest.spyOn(h.services.logger, level).mockImplementation(((...args: Call) => {
      calls.push({ level, call: args });
      return original(...(args as [object, string]));
    }) as never);
  }

  let stopped = false;
  const statuses: number[] = [];
  const load = Array.from({ length: CLIENTS }, async () => {
    while (!stopped) {
      const res = await fetch(`${h.apiUrl}/balance`, { headers: { authorization: `Bearer ${apiKey}` } }).catch(
        () => undefined,
      );
      if (res) {
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  try {
    await eventually(async () => statuses.filter((s) => s === 200).length >= CLIENTS);
    await pg.stop();
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    await pg.start();
    // Back: requests succeed again and the info line is written.
    await eventually(
      async () => calls.some((c) => c.level === 'info' && c.call[1] === 'database is back'),
      30_000,
      100,
    );
  } finally {
    stopped = true;
    await Promise.all(load);
  }

  const deferred = statuses.filter((s) => s === 503).length;
  const mine = calls.filter((c) => c.call[1] !== 'request');
  const downs = mine.filter((c) => c.level === 'error');
  const warns = mine.filter((c) => c.level === 'warn');
  const backs = mine.filter((c) => c.level === 'info');
  expect(deferred).toBeGreaterThan(50);
  expect(downs.map((c) => c.call)).toEqual([
    [{ dependency: 'database' }, expect.stringMatching(/^database is unavailable/)],
  ]);
  // The first, then one per 10 s of the outage (and of the recovery's last moments).
  expect(warns.length).toBeGreaterThanOrEqual(2);
  expect(warns.length).toBeLessThanOrEqual(Math.ceil(OUTAGE_MS / 10_000) + 3);
  for (const w of warns) expect(w.call[0]).toMatchObject({ dependency: 'database', deferred: expect.any(Number) });
  expect(backs.map((c) => c.call[0])).toEqual([
    expect.objectContaining({ dependency: 'database', deferred: expect.any(Number) }),
  ]);
  // Every deferred request is in a count: the warn lines' counts plus those after the last line.
  const counted = warns.reduce((sum, w) => sum + Number(w.call[0].deferred), 0);
  expect(counted).toBeLessThanOrEqual(deferred);
  expect(backs[0].call[0].deferred).toBe(deferred);
  expect(mine.length).toBeLessThan(10);
}, 90_000);
