// bench/anatomy: where an order's time goes, phase by phase, on each engine. Starts a fresh
// `npm start` stack per engine (SERVER_TIMING on), places N balance orders at C=1, and lines up
// three clocks for each: the client's (request out, response in), the API's Server-Timing steps
// (the key and its rate limit in one statement, the update-with-start, and a read of the codes
// where the answer does not carry them sealed), and the event times Temporal wrote into the workflow's history (started, task scheduled, task started,
// task completed). The same for N empty update-with-starts sent from this process to a worker in
// it. The worker's own view comes from the SDK's metrics (schedule-to-start, task execution, local
// activity), scraped before and after. Then it places a load of orders and measures again, to show
// which phase grows as the stack ages. With --concurrency C the orders are placed C at a time, and a
// last table gives each phase's mean over the slowest 5% of orders beside its mean over all: which
// phase makes the tail under load.
// Usage:   npm run bench:anatomy -- [--engines dev,server] [--concurrency C=1] [N=200] [load=3000]
import { Agent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { loadConfig } from '../src/config';
import { initOrm, type Orm } from '../src/db/orm';
import { createAccount, createApiKey } from '../src/services/accounts/accounts';
import { adjustBalance } from '../src/services/payments/admin';
import { orderWorkflowId } from '../src/contracts/orders-contract';
import { freeLoopbackPort } from '../src/temporal/runtime';
import { barWorker, emptyUpdateWithStart } from './bar';
import { pct, post as postOn, runPool } from './pool';
import { parseEngines, startStack, type Stack } from './stack';

const args = process.argv.slice(2);
const flagAt = args.indexOf('--engines');
const concurrencyAt = args.indexOf('--concurrency');
const C = concurrencyAt >= 0 ? Number(args[concurrencyAt + 1]) : 1;
const positional = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
const N = Number(positional[0] ?? 200);
const LOAD = Number(positional[1] ?? 3000);
const EventType = temporal.api.enums.v1.EventType;
const now = () => performance.timeOrigin + performance.now();

type Sample = Record<string, number>;

// ---- the three clocks -------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: 16 });
const post = async (url: string, headers: Record<string, string>, body: string) => {
  const answer = await postOn(agent, url, headers, body);
  return { status: answer.status, timing: String(answer.headers['server-timing'] ?? '') };
};

/** `auth;dur=1.2, sent;desc="1732…"` → { auth: 1.2, sent: 1732… }. */
function parseServerTiming(h: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of h.split(',')) {
    const [name, ...params] = part.trim().split(';');
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k === 'dur' || k === 'desc') out[name] = Number(v.replace(/"/g, ''));
    }
  }
  return out;
}

const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  t ? Number(t.seconds) * 1000 + (t.nanos ?? 0) / 1e6 : NaN;

/** The times of the first workflow task's events, from the workflow's history. */
async function historyTimes(client: Client, workflowId: string): Promise<Sample> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const first = (type: number) => ms(history.events?.find((e) => e.eventType === type)?.eventTime);
  return {
    started: first(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
    scheduled: first(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
    taskStarted: first(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED),
    taskCompleted: first(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
  };
}

// ---- the worker's view (SDK metrics, before and after) ----------------------------------------

const WORKER_METRICS = {
  'schedule-to-start (SDK)': 'temporal_workflow_task_schedule_to_start_latency',
  'task execution (SDK)': 'temporal_workflow_task_execution_latency',
  'local activity (SDK)': 'temporal_local_activity_execution_latency',
  '  of it the placement itself (service)': 'wholesale_order_placement',
  'task end-to-end (SDK)': 'temporal_workflow_endtoend_latency',
} as const;

type Histo = Record<string, { sum: number; count: number }>;
async function scrape(url: string): Promise<Histo> {
  const text = await (await fetch(url)).text();
  const out: Histo = {};
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+?)(?:_seconds)?_(sum|count)(?:\{[^}]*\})? ([0-9.eE+-]+)$/.exec(line);
    if (!m) continue;
    const h = (out[m[1]] ??= { sum: 0, count: 0 });
    h[m[2] as 'sum' | 'count'] += Number(m[3]);
  }
  return out;
}
function meanDelta(before: Histo, after: Histo, name: string): number {
  const a = after[name];
  const b = before[name] ?? { sum: 0, count: 0 };
  return a && a.count > b.count ? ((a.sum - b.sum) / (a.count - b.count)) * 1000 : NaN;
}

// ---- phases ------------------------------------------------------------------------------------

function phasesOfOrder(s: Sample): Sample {
  const engineEnd = s.sent + s.engine;
  return {
    'HTTP in/out, Express, JSON': s.total - s.app,
    'key and rate limit (Postgres)': s.auth,
    'sent → workflow started': s.started - s.sent,
    'started → task scheduled': s.scheduled - s.started,
    'task scheduled → started (matching)': s.taskStarted - s.scheduled,
    'task started → completed (worker)': s.taskCompleted - s.taskStarted,
    'task completed → update answered': engineEnd - s.taskCompleted,
    'update-with-start, whole': s.engine,
    'read the codes (Postgres)': s.read ?? 0,
    'rest of the handler': s.app - s.auth - s.engine - (s.read ?? 0),
    'client total': s.total,
  };
}

function phasesOfEmpty(s: Sample): Sample {
  return {
    'sent → workflow started': s.started - s.sent,
    'started → task scheduled': s.scheduled - s.started,
    'task scheduled → started (matching)': s.taskStarted - s.scheduled,
    'task started → completed (worker)': s.taskCompleted - s.taskStarted,
    'task completed → update answered': s.answered - s.taskCompleted,
    'client total': s.answered - s.sent,
  };
}

function table(title: string, samples: Sample[], extra: Record<string, number>): void {
  console.log(`\n${title}`);
  console.log(`${'phase'.padEnd(40)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}`);
  for (const name of Object.keys(samples[0] ?? {})) {
    const xs = samples
      .map((s) => s[name])
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    console.log(`${name.padEnd(40)} ${pct(xs, 50).toFixed(2).padStart(8)} ${pct(xs, 99).toFixed(2).padStart(8)}`);
  }
  for (const [name, v] of Object.entries(extra))
    console.log(`${name.padEnd(40)} ${v.toFixed(2).padStart(8)} ${'(mean)'.padStart(8)}`);
}

// ---- one engine --------------------------------------------------------------------------------

async function measureOrders(stack: Stack, orm: Orm, client: Client, label: string): Promise<void> {
  const config = loadConfig({ ...process.env, ...stack.env });
  const em = orm.em.fork();
  const account = await createAccount(em, `anatomy-${randomUUID().slice(0, 6)}`);
  await adjustBalance(em, {
    accountId: account.accountId,
    amount: ((N + 50) * 0.02 + 1).toFixed(2),
    note: 'anatomy funding',
    levelThresholds: config.LEVEL_THRESHOLDS,
  });
  // One key per client: the per-key budget is not what is measured.
  const keys = [account.apiKey];
  while (keys.length < C) keys.push(await createApiKey(em, account.accountId));
  const run = randomUUID().slice(0, 8);
  const place = async (i: number, tag: string) => {
    const externalOrderId = `anatomy-${run}-${tag}${i}`;
    const t0 = now();
    const res = await post(
      `${stack.apiUrl}/orders`,
      { authorization: `Bearer ${keys[i % keys.length]}`, 'content-type': 'application/json' },
      JSON.stringify({ externalOrderId, productId: 'prod_api_order_test', qty: 1 }),
    );
    const total = now() - t0;
    if (res.status !== 200) throw new Error(`order answered ${res.status}`);
    return { workflowId: orderWorkflowId(account.accountId, externalOrderId), total, ...parseServerTiming(res.timing) };
  };
  for (let i = 0; i < 50; i++) await place(i, 'w');
  const before = await scrape(stack.metricsUrl);
  const placed: Awaited<ReturnType<typeof place>>[] = [];
  const pool = await runPool('orders', N, C, async (i) => {
    placed.push(await place(i, ''));
    return true;
  });
  const after = await scrape(stack.metricsUrl);
  // The histories are read once every order is placed, so that reading them adds no load.
  const samples: Sample[] = [];
  for (const { workflowId, ...s } of placed)
    samples.push(phasesOfOrder({ ...s, ...(await historyTimes(client, workflowId)) }));
  table(
    `${stack.engine}: order at C=${C}, ${label} (N=${samples.length} of ${N}, ${(N / pool.seconds).toFixed(1)} orders/s)`,
    samples,
    Object.fromEntries(Object.entries(WORKER_METRICS).map(([k, m]) => [k, meanDelta(before, after, m)])),
  );
  if (C > 1) tailTable(samples);
}

/** Each phase's mean over the slowest 5% of orders (by the client's clock) beside its mean over all. */
function tailTable(samples: Sample[]): void {
  const slow = [...samples]
    .sort((a, b) => b['client total'] - a['client total'])
    .slice(0, Math.max(1, Math.ceil(samples.length / 20)));
  const mean = (xs: Sample[], name: string) =>
    xs.reduce((sum, s) => sum + (Number.isFinite(s[name]) ? s[name] : 0), 0) / xs.length;
  console.log(`\n${'phase'.padEnd(40)} ${'mean ms'.padStart(8)} ${'slowest 5%'.padStart(10)}`);
  for (const name of Object.keys(samples[0] ?? {}))
    console.log(
      `${name.padEnd(40)} ${mean(samples, name).toFixed(2).padStart(8)} ${mean(slow, name).toFixed(2).padStart(10)}`,
    );
}

async function measureEmpty(
  stack: Stack,
  client: Client,
  nativeConnection: NativeConnection,
  metricsUrl: string,
  taskQueue: string,
  label: string,
): Promise<void> {
  const config = loadConfig({ ...process.env, ...stack.env });
  const tag = randomUUID().slice(0, 6);
  const worker = await barWorker({ connection: nativeConnection, taskQueue, config });
  await worker.runUntil(async () => {
    const once = async (id: string): Promise<Sample> => {
      const sent = now();
      await emptyUpdateWithStart(client, taskQueue, id);
      return { sent, answered: now() };
    };
    for (let i = 0; i < 50; i++) await once(`${taskQueue}:${tag}w${i}`);
    const before = await scrape(metricsUrl);
    const samples: Sample[] = [];
    for (let i = 0; i < N; i++) {
      const s = await once(`${taskQueue}:${tag}${i}`);
      samples.push(phasesOfEmpty({ ...s, ...(await historyTimes(client, `${taskQueue}:${tag}${i}`)) }));
    }
    const after = await scrape(metricsUrl);
    table(
      `${stack.engine}: empty update-with-start at C=1, ${label} (N=${N})`,
      samples,
      Object.fromEntries(Object.entries(WORKER_METRICS).map(([k, m]) => [k, meanDelta(before, after, m)])),
    );
  });
}

async function anatomyOf(stack: Stack, coreMetricsUrl: string): Promise<void> {
  const orm = await initOrm(stack.env.DATABASE_URL);
  const connection = await Connection.connect({ address: stack.env.TEMPORAL_ADDRESS });
  const nativeConnection = await NativeConnection.connect({ address: stack.env.TEMPORAL_ADDRESS });
  const client = new Client({ connection, namespace: loadConfig({ ...process.env, ...stack.env }).TEMPORAL_NAMESPACE });
  // The bar's task queue lives as long as the stack, as the service's own queue does.
  const taskQueue = `anatomy-${randomUUID().slice(0, 8)}`;
  try {
    await measureEmpty(stack, client, nativeConnection, coreMetricsUrl, taskQueue, 'new task queue');
    await measureOrders(stack, orm, client, 'fresh stack');
    // Age the stack the way bench runs do, then look again.
    const config = loadConfig({ ...process.env, ...stack.env });
    const em = orm.em.fork();
    const account = await createAccount(em, 'anatomy-load');
    await adjustBalance(em, {
      accountId: account.accountId,
      amount: (LOAD * 0.02 + 1).toFixed(2),
      note: 'anatomy load',
      levelThresholds: config.LEVEL_THRESHOLDS,
    });
    const keys = [account.apiKey];
    while (keys.length < 16) keys.push(await createApiKey(em, account.accountId));
    const run = randomUUID().slice(0, 8);
    const load = await runPool(
      'load',
      LOAD,
      16,
      async (i) =>
        (
          await post(
            `${stack.apiUrl}/orders`,
            { authorization: `Bearer ${keys[i % 16]}`, 'content-type': 'application/json' },
            JSON.stringify({ externalOrderId: `load-${run}-${i}`, productId: 'prod_api_order_test', qty: 1 }),
          )
        ).status === 200,
    );
    console.log(
      `\n${stack.engine}: placed ${LOAD} orders at C=16 (${load.failures} failed, ${(LOAD / load.seconds).toFixed(1)}/s)`,
    );
    await new Promise((r) => setTimeout(r, 5000));
    await measureOrders(stack, orm, client, `after ${LOAD} more orders`);
    await measureEmpty(stack, client, nativeConnection, coreMetricsUrl, taskQueue, 'the same task queue, later');
  } finally {
    await connection.close();
    await nativeConnection.close();
    await orm.close();
  }
}

async function main() {
  const port = await freeLoopbackPort();
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: {
      metrics: {
        prometheus: { bindAddress: `127.0.0.1:${port}`, countersTotalSuffix: true, useSecondsForDurations: true },
      },
    },
  });
  console.log(`bench/anatomy  N=${N}  load=${LOAD}  (${new Date().toISOString()})`);
  for (const engine of parseEngines(flagAt >= 0 ? args[flagAt + 1] : 'dev,server')) {
    const stack = await startStack(engine, { SERVER_TIMING: 'true' });
    try {
      await anatomyOf(stack, `http://127.0.0.1:${port}/metrics`);
    } finally {
      await stack.stop();
    }
  }
  agent.destroy();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
