// bench/shape: what the order workflow's own shape costs the engine, with no HTTP and no Postgres.
// Starts its own dev server (the `npm start` settings, its own SQLite file), and in this one
// process a client and a worker. It alternates five phases of N update-with-starts at concurrency C:
//   - the bar: bench/workflows' empty update-with-start (the same as bench/orders' engine row);
//   - the same workflow answering its update through a no-op local activity (the shape, bare);
//   - that shape again with the service's payload codec on client and worker (the codec's share);
//   - `orderWorkflow` from the service's bundle, with its interceptors and search attributes, its
//     placement local activity stubbed to answer "placed" at once, without the codec and with it.
// For each it prints the rate, the p50, and the CPU per operation of this process and of the dev
// server. Usage:   npm run bench:shape -- [N=400] [C=16] [rounds=2]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startDevTemporal } from '../src/dev/temporal';
import { freeLowPort } from '../src/dev/ports';
import { bundleWorkflows, workflowPolling } from '../src/temporal/temporal-worker';
import { dataConverter, parseKeyRing } from '../src/temporal/codec';
import { safeActivityFailures } from '../src/temporal/safe-failures';
import { orderStarter } from '../src/temporal/starters';
import { placeOrderUpdate, type Placement } from '../src/contracts/orders-contract';
import { loadConfig } from '../src/config';
import { benchUpdate } from './workflows';
import { pct, procCpu, runPool, type Result } from './pool';

const N = Number(process.argv[2] ?? 400);
const C = Number(process.argv[3] ?? 16);
const ROUNDS = Number(process.argv[4] ?? 2);
const WARMUP = 100;
const NAMESPACE = 'default';

/** A phase with a failed operation measured something else: stop. */
function failed(r: Result): Result {
  if (r.failures > 0) throw new Error(`${r.name}: ${r.failures} of ${r.latencies.length} operations failed`);
  return r;
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig();
  const dir = mkdtempSync(join(tmpdir(), 'bench-shape-'));
  const port = await freeLowPort();
  const server = await startDevTemporal({
    port,
    uiPort: 0,
    namespace: NAMESPACE,
    dbFilename: join(dir, 'temporal.db'),
  });
  const serverPid = Number(
    execFileSync('pgrep', ['-f', `start-dev --ip 127.0.0.1 --port ${port} `])
      .toString()
      .trim()
      .split('\n')[0],
  );
  const runId = randomUUID().slice(0, 8);
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const codec = dataConverter(parseKeyRing(config.TEMPORAL_PAYLOAD_KEYS));

  const barQueue = `bar-${runId}`;
  const orderQueue = `order-${runId}`;
  const codecQueue = `codec-${runId}`;
  const plainOrderQueue = `plain-order-${runId}`;
  const bar = await Worker.create({
    connection: nativeConnection,
    namespace: NAMESPACE,
    taskQueue: barQueue,
    workflowsPath: require.resolve('./workflows'),
    activities: { benchNoop: async (x: string) => x },
    ...workflowPolling(config),
  });
  const barWithCodec = await Worker.create({
    connection: nativeConnection,
    namespace: NAMESPACE,
    taskQueue: codecQueue,
    dataConverter: codec,
    workflowsPath: require.resolve('./workflows'),
    activities: { benchNoop: async (x: string) => x },
    ...workflowPolling(config),
  });
  const orderBundle = await bundleWorkflows();
  const placed = async (): Promise<Placement> => ({
    outcome: 'placed',
    orderId: randomUUID(),
    reused: false,
    status: 'paid',
    fulfillmentStatus: null,
  });
  const order = await Worker.create({
    connection: nativeConnection,
    namespace: NAMESPACE,
    taskQueue: orderQueue,
    workflowBundle: orderBundle,
    dataConverter: codec,
    activities: { placeOrder: placed },
    interceptors: { activity: [safeActivityFailures] },
    ...workflowPolling(config),
  });
  const plainOrder = await Worker.create({
    connection: nativeConnection,
    namespace: NAMESPACE,
    taskQueue: plainOrderQueue,
    workflowBundle: orderBundle,
    activities: { placeOrder: placed },
    interceptors: { activity: [safeActivityFailures] },
    ...workflowPolling(config),
  });
  const barClient = new Client({ connection, namespace: NAMESPACE });
  const orderClient = new Client({ connection, namespace: NAMESPACE, dataConverter: codec });
  const orderTemporal = {
    client: orderClient,
    connection,
    namespace: NAMESPACE,
    taskQueue: orderQueue,
    placementDeadlineMs: 30_000,
  };
  const plainOrderTemporal = {
    client: barClient,
    connection,
    namespace: NAMESPACE,
    taskQueue: plainOrderQueue,
    placementDeadlineMs: 30_000,
  };
  const placeThrough = (temporal: typeof orderTemporal, externalOrderId: string) => {
    const starter = orderStarter(temporal, config, { accountId: 'acc_bench', externalOrderId });
    return temporal.client.workflow.executeUpdateWithStart(placeOrderUpdate, {
      args: [{ productId: 'prod', qty: 1, payment: 'balance', source: 'rest', placementId: randomUUID() }],
      startWorkflowOperation: starter.withStart(),
    });
  };

  const phases = {
    'empty update-with-start (the bar)': (tag: string) => async (i: number) => {
      const op = new WithStartWorkflowOperation('benchWorkflow', {
        workflowId: `bar:${tag}${i}`,
        taskQueue: barQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      return (
        (await barClient.workflow.executeUpdateWithStart(benchUpdate, { args: ['x'], startWorkflowOperation: op })) ===
        'x'
      );
    },
    '… answered by a no-op local activity': (tag: string) => async (i: number) => {
      const op = new WithStartWorkflowOperation('benchLocalActivityWorkflow', {
        workflowId: `la:${tag}${i}`,
        taskQueue: barQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      return (
        (await barClient.workflow.executeUpdateWithStart(benchUpdate, { args: ['x'], startWorkflowOperation: op })) ===
        'x'
      );
    },
    '… the same, with the payload codec': (tag: string) => async (i: number) => {
      const op = new WithStartWorkflowOperation('benchLocalActivityWorkflow', {
        workflowId: `codec:${tag}${i}`,
        taskQueue: codecQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      return (
        (await orderClient.workflow.executeUpdateWithStart(benchUpdate, {
          args: ['x'],
          startWorkflowOperation: op,
        })) === 'x'
      );
    },
    'orderWorkflow, stubbed, no codec': (tag: string) => async (i: number) =>
      (await placeThrough(plainOrderTemporal, `plain-${tag}${i}`)).outcome === 'placed',
    'orderWorkflow, placement stubbed': (tag: string) => async (i: number) =>
      (await placeThrough(orderTemporal, `${tag}${i}`)).outcome === 'placed',
  };

  // BENCH_SHAPE_ONLY=<start of a phase's name> runs that phase alone (for a CPU profile of it).
  const only = process.env.BENCH_SHAPE_ONLY;
  for (const name of Object.keys(phases) as (keyof typeof phases)[])
    if (only && !name.startsWith(only)) delete phases[name];
  const rows: string[] = [];
  await Promise.all([
    bar.run(),
    barWithCodec.run(),
    plainOrder.run(),
    order.run(),
    (async () => {
      try {
        for (const [name, task] of Object.entries(phases)) failed(await runPool(name, WARMUP, C, task(`w-${runId}-`)));
        for (let round = 0; round < ROUNDS; round++) {
          for (const [name, task] of Object.entries(phases)) {
            await new Promise((r) => setTimeout(r, 2000));
            const [self0, srv0] = [process.cpuUsage(), procCpu(serverPid)];
            const r = failed(await runPool(name, N, C, task(`r${round}-${runId}-`)));
            const self = process.cpuUsage(self0);
            const srv = procCpu(serverPid) - srv0;
            rows.push(
              `${name.padEnd(38)} ${(N / r.seconds).toFixed(1).padStart(8)}/s  p50 ${pct(
                [...r.latencies].sort((a, b) => a - b),
                50,
              )
                .toFixed(1)
                .padStart(6)} ms  ` +
                `client+worker ${((self.user + self.system) / 1000 / N).toFixed(2).padStart(6)} ms  server ${((srv * 1000) / N).toFixed(2).padStart(6)} ms per op`,
            );
            console.log(rows[rows.length - 1]);
          }
        }
      } finally {
        for (const worker of [bar, barWithCodec, plainOrder, order]) worker.shutdown();
      }
    })(),
  ]);
  await connection.close();
  await nativeConnection.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
  console.log(`\nbench/shape  N=${N}  C=${C}  (${new Date().toISOString()})\n${rows.join('\n')}`);
  // Each phase's rate against the bar's in the same round.
  const perRound = Object.keys(phases).length;
  for (let round = 0; round < ROUNDS; round++) {
    const rates = rows.slice(round * perRound, (round + 1) * perRound).map((r) => Number(/\s([\d.]+)\/s/.exec(r)?.[1]));
    console.log(
      `round ${round + 1}: ${Object.keys(phases)
        .map((name, i) => `${name.trim()} ${(rates[i] / rates[0]).toFixed(2)}x`)
        .join(', ')}`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
