// bench/worker-start: how long a worker process takes from its start to its first poll of the task
// queue, run from the TypeScript sources (tsx, the workflow code bundled with webpack at start:
// development) and from the production build (`node dist/src/worker.js` with the prebuilt bundle).
// Starts its own embedded Postgres and dev server; each start gets a task queue of its own, and the
// first poll is the moment the server lists a poller on it (DescribeTaskQueue). Rounds alternate
// the two, so the machine's background load falls on both alike.
// Usage:   npm run build && npm run bench:worker-start -- [ROUNDS=5]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { initOrm, migrate } from '../src/db/orm';
import { freeLowPort } from '../src/dev/ports';
import { startEmbeddedPostgres } from '../src/dev/postgres';
import { startDevTemporal } from '../src/dev/temporal';
import { procCpu } from './pool';

const ROUNDS = Number(process.argv[2] ?? 5);
const root = resolve(__dirname, '..');
const MODES = {
  'sources (tsx, bundled at start)': ['--import', 'tsx', 'src/worker.ts'],
  'dist/ (prebuilt bundle)': ['dist/src/worker.js'],
} as const;

async function main() {
  if (!existsSync(join(root, 'dist', 'workflow-bundle.js')))
    throw new Error('no dist/workflow-bundle.js: run `npm run build` first');
  const dir = mkdtempSync(join(tmpdir(), 'bench-worker-start-'));
  const pg = await startEmbeddedPostgres({
    dataDir: join(dir, 'pg'),
    port: await freeLowPort(),
    database: 'wholesale',
  });
  const temporal = await startDevTemporal({
    port: await freeLowPort(),
    uiPort: 0,
    namespace: 'default',
    dbFilename: join(dir, 'temporal.db'),
  });
  const orm = await initOrm(pg.url, {}, { quietMigrations: true });
  await migrate(orm);
  await orm.close();
  const connection = await Connection.connect({ address: temporal.address });
  const results: Record<string, { seconds: number; cpu: number }[]> = Object.fromEntries(
    Object.keys(MODES).map((m) => [m, []]),
  );
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [mode, args] of Object.entries(MODES)) {
        const taskQueue = `start-${round}-${mode.split(' ')[0]}-${process.pid}`;
        const started = performance.now();
        const child = spawn(process.execPath, [...args], {
          cwd: root,
          stdio: 'ignore',
          env: {
            ...process.env,
            NODE_ENV: 'development',
            DATABASE_URL: pg.url,
            TEMPORAL_ADDRESS: temporal.address,
            TEMPORAL_TASK_QUEUE: taskQueue,
            METRICS_PORT: String(await freeLowPort()),
            RECONCILE_SECONDS: '0',
            LOG_LEVEL: 'warn',
          },
        });
        for (;;) {
          if (child.exitCode !== null)
            throw new Error(`${mode}: the worker exited (${child.exitCode}) before it polled`);
          const described = await connection.workflowService.describeTaskQueue({
            namespace: 'default',
            taskQueue: { name: taskQueue, kind: proto.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          });
          if ((described.pollers ?? []).length > 0) break;
          await new Promise((r) => setTimeout(r, 25));
        }
        results[mode].push({ seconds: (performance.now() - started) / 1000, cpu: procCpu(child.pid!) });
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  } finally {
    await connection.close();
    await temporal.stop();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`\nbench/worker-start  rounds=${ROUNDS}  (${new Date().toISOString()})\n`);
  console.log('worker from                          start to first poll: median   min    max    CPU s (median)');
  for (const [mode, runs] of Object.entries(results)) {
    const s = runs.map((r) => r.seconds);
    console.log(
      `${mode.padEnd(36)} ${median(s).toFixed(2).padStart(22)} s ${Math.min(...s)
        .toFixed(2)
        .padStart(5)} ${Math.max(...s)
        .toFixed(2)
        .padStart(6)} ${median(runs.map((r) => r.cpu))
        .toFixed(2)
        .padStart(10)}`,
    );
  }
  const [before, after] = Object.values(results).map((runs) => median(runs.map((r) => r.seconds)));
  console.log(`\nthe prebuilt bundle starts a worker ${(before / after).toFixed(1)}x sooner`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
