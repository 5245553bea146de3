import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { startStoppablePostgres, type StoppablePostgres } from '../helpers/stoppable-postgres';

// Issue 16 item 2: GET /readyz is 200 only while Postgres, the Temporal client and the worker are
// up. Here the service runs on a Postgres server of this test's own, which is really stopped
// (SIGINT to the postmaster) and started again: readiness follows it, liveness stays 200, and
// the service recovers by itself, without a restart.
let pg: StoppablePostgres;
let h: Harness;

beforeAll(async () => {
  pg = await startStoppablePostgres();
  h = await startHarness({}, { databaseUrl: pg.url });
}, 120_000);

afterAll(async () => {
  await h?.stop();
  await pg?.close();
});

async function get(path: string) {
  const res = await fetch(`${h.baseUrl}${path}`);
  return { status: res.status, body: (await res.json()) as any, requestId: res.headers.get('x-request-id') };
}

test('/readyz turns 503 while Postgres is stopped and 200 when it is back; /healthz stays 200 and names the part', async () => {
  const { apiKey } = await h.account('10.00');
  const balance = () => fetch(`${h.apiUrl}/balance`, { headers: { authorization: `Bearer ${apiKey}` } });

  const before = await get('/readyz');
  expect(before.status).toBe(200);
  expect(before.body).toMatchObject({ ready: true, database: 'up', temporal: 'up', worker: { phase: 'running' } });

  await pg.stop();
  try {
    const down = await eventually(
      async () => {
        const r = await get('/readyz');
        return r.status === 503 ? r : undefined;
      },
      20_000,
      250,
    );
    expect(down.body).toMatchObject({
      error: 'service_unavailable',
      retryable: true,
      requestId: down.requestId,
      details: { ready: false, database: 'down', degraded: ['database'] },
    });
    const live = await get('/healthz');
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ ok: true, status: 'degraded', database: 'down', degraded: ['database'] });
    // A request that needs the database is a clear, retryable 503, not a hang and not a crash.
    const refused = await balance();
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: 'service_unavailable', retryable: true });
  } finally {
    await pg.start();
  }

  const back = await eventually(
    async () => {
      const r = await get('/readyz');
      return r.status === 200 ? r : undefined;
    },
    30_000,
    250,
  );
  expect(back.body).toMatchObject({ ready: true, database: 'up' });
  const res = await balance();
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ balance: '10.00' });
}, 120_000);
