// bench/capacity: how many orders per second one worker process (and one API process) serves on
// this machine, at the point where workflow-task schedule-to-start p95 crosses 1 s, Temporal's own
// threshold for an overloaded worker. On the topology harness (its own Postgres, the production
// Temporal server or the dev server, one `npm run api` and one `npm run worker`), balance orders
// arrive open-loop from many accounts at a rate raised step by step; each step reads the worker's
// schedule-to-start histograms (its SDK metrics) and the CPU of both processes. The bare engine's
// empty update-with-start rate is measured in the same run, as the bar. It prints each step, the
// per-process figures and the sizing rule (README, Operations: sizing).
// Usage:   npm run bench:capacity -- [--temporal server|dev] [--start 4] [--factor 1.25]
//          [--step-seconds 20] [--max-steps 14] [--accounts 64] [--peak 100]
import { Agent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config';
import { initOrm } from '../src/db/orm';
import { createAccount } from '../src/services/accounts/accounts';
import { adjustBalance } from '../src/services/payments/admin';
import { TEST_PRODUCT_ID } from '../src/domain/test-product';
import { startTopology, type Proc, type Topology } from '../test/topology/harness';
import { post as postOn, procCpu, runPool } from './pool';
import { barWorker, emptyUpdateWithStart } from './bar';
import {
  achieved,
  capacity,
  delta,
  keptUp,
  pct,
  scheduleToStart,
  sizing,
  STEP_HEADER,
  stepLine,
  waits,
  type Step,
} from './capacity-report';

const { values: args } = parseArgs({
  options: {
    temporal: { type: 'string', default: 'server' },
    start: { type: 'string', default: '4' },
    factor: { type: 'string', default: '1.25' },
    'step-seconds': { type: 'string', default: process.env.CAPACITY_STEP_SECONDS ?? '20' },
    'max-steps': { type: 'string', default: '14' },
    accounts: { type: 'string', default: '64' },
    peak: { type: 'string', default: '100' },
  },
});
const STEP_SECONDS = Number(args['step-seconds']);
const MAX_IN_FLIGHT = 512;

const agent = new Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
const post = async (url: string, key: string, body: string) =>
  (await postOn(agent, url, { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body)).status;

/** Orders at `rate` per second for `seconds`, open loop (arrivals on a clock, whatever the answers). */
async function offer(api: Proc, keys: string[], rate: number, seconds: number, tag: string) {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let inFlight = 0;
  const pending: Promise<void>[] = [];
  const started = performance.now();
  const total = Math.round(rate * seconds);
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (inFlight >= MAX_IN_FLIGHT) {
      failed++; // the stack is this far behind: counted as a failure, not queued
      continue;
    }
    inFlight++;
    const t0 = performance.now();
    const body = JSON.stringify({ externalOrderId: `cap-${tag}-${i}`, productId: TEST_PRODUCT_ID, qty: 1 });
    pending.push(
      post(`${api.apiUrl}/orders`, keys[i % keys.length], body)
        .then(
          (status) => (status === 200 ? ok++ : failed++),
          () => failed++,
        )
        .then(() => {
          latencies.push(performance.now() - t0);
          inFlight--;
        }),
    );
  }
  await Promise.all(pending);
  return { ok, failed, latencies, seconds: (performance.now() - started) / 1000 };
}

async function scrape(worker: Proc) {
  const text = await (await fetch(`${worker.baseUrl}/metrics`)).text();
  return { workflow: scheduleToStart(text, 'workflow_task'), activity: scheduleToStart(text, 'activity') };
}

/** The bar: the engine's empty update-with-start, closed loop at 16, on a worker in this process. */
async function bareEngine(topology: Topology): Promise<number> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig({ TEMPORAL_PAYLOAD_KEYS: process.env.TEMPORAL_PAYLOAD_KEYS });
  const taskQueue = `capacity-bar-${randomUUID().slice(0, 8)}`;
  const nativeConnection = await NativeConnection.connect({ address: topology.temporalAddress });
  const connection = await Connection.connect({ address: topology.temporalAddress });
  const worker = await barWorker({ connection: nativeConnection, taskQueue, config, namespace: 'default' });
  const client = new Client({ connection, namespace: 'default' });
  const uws = (tag: string) => (i: number) => emptyUpdateWithStart(client, taskQueue, `bar:${taskQueue}:${tag}${i}`);
  const result = await worker.runUntil(async () => {
    await runPool('warm-up', 100, 16, uws('w'));
    return runPool('bar', 400, 16, uws(''));
  });
  await connection.close();
  await nativeConnection.close();
  if (result.failures > 0) throw new Error(`${result.failures} empty update-with-starts failed`);
  return 400 / result.seconds;
}

async function main() {
  process.env.TEMPORAL_PAYLOAD_KEYS ??= `capacity:${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')}`;
  const topology = await startTopology({
    apis: 1,
    workers: 1,
    temporal: args.temporal as 'server' | 'dev',
    env: { RATE_LIMIT_PER_MINUTE: '1000000', RECONCILE_SECONDS: '0' },
  });
  const [api] = topology.apis;
  const [worker] = topology.workers;
  try {
    const orm = await initOrm(topology.databaseUrl);
    const keys: string[] = [];
    for (let i = 0; i < Number(args.accounts); i++) {
      const em = orm.em.fork();
      const a = await createAccount(em, `capacity-${i}`);
      await adjustBalance(em, {
        accountId: a.accountId,
        amount: '100000.00',
        note: 'capacity bench funding',
        levelThresholds: loadConfig({}).LEVEL_THRESHOLDS,
      });
      keys.push(a.apiKey);
    }
    await orm.close();
    const runId = randomUUID().slice(0, 8);
    // Warm-up: JIT, pools, the task queue; not measured.
    await offer(api, keys, Number(args.start), 10, `${runId}-w`);

    const steps: Step[] = [];
    console.log(
      `\nbench/capacity  temporal=${topology.temporalMode}  1 API + 1 worker process  steps of ${STEP_SECONDS} s  (${new Date().toISOString()})\n`,
    );
    console.log(STEP_HEADER);
    let rate = Number(args.start);
    for (let n = 0; n < Number(args['max-steps']); n++, rate *= Number(args.factor)) {
      const before = await scrape(worker);
      const cpu0 = { api: procCpu(api.child!.pid!), worker: procCpu(worker.child!.pid!) };
      const r = await offer(api, keys, rate, STEP_SECONDS, `${runId}-${n}`);
      const after = await scrape(worker);
      const step: Step = {
        target: rate,
        seconds: r.seconds,
        ok: r.ok,
        failed: r.failed,
        latenciesMs: r.latencies,
        workflowTasks: waits(delta(before.workflow, after.workflow)),
        activityTasks: waits(delta(before.activity, after.activity)),
        apiCpu: procCpu(api.child!.pid!) - cpu0.api,
        workerCpu: procCpu(worker.child!.pid!) - cpu0.worker,
      };
      steps.push(step);
      console.log(stepLine(step));
      if (!keptUp(step)) break;
      // Let the step's tail drain before the next one is measured.
      await new Promise((r) => setTimeout(r, 3000));
    }
    const engine = await bareEngine(topology);
    const c = capacity(steps);
    const rule = sizing(c, Number(args.peak));
    const kept = steps.filter(keptUp);
    const lastKept = kept[kept.length - 1];
    console.log(`
one worker process kept up to      ${c.perWorker.toFixed(1)} orders/s (p95 HTTP ${pct(
      [...lastKept.latenciesMs].sort((a, b) => a - b),
      95,
    ).toFixed(
      0,
    )} ms)${c.crossedAt ? `; fell behind at ${c.crossedAt.toFixed(1)} offered` : '; never fell behind: raise --max-steps'}
one API process, per core          ${c.perApiCore.toFixed(1)} orders/s (its CPU per order)
one worker process, per core       ${c.perWorkerCore.toFixed(1)} orders/s (its CPU per order)
tasks per order                    ${c.tasksPerOrder.toFixed(2)} (workflow + activity)
the bare engine (empty update-with-start, C=16)  ${engine.toFixed(1)}/s: one worker's capacity is ${(c.perWorker / engine).toFixed(2)}x of it

sizing for ${args.peak} orders/s at peak: ${rule.workers} worker replicas (ceil(peak / ${c.perWorker.toFixed(1)})), ${rule.apis} API replicas at 70% CPU;
KEDA targetQueueSize ${rule.targetQueueSize} (${c.perWorker.toFixed(1)} orders/s x ${c.tasksPerOrder.toFixed(2)} tasks per order x 1 s)`);
    console.log(`CAPACITY_RESULT ${JSON.stringify({ ...c, engine, achieved: steps.map(achieved), ...rule })}`);
  } finally {
    agent.destroy();
    await topology.teardown();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
