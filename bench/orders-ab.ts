// `npm run bench:orders-ab -- --against DIR [--engine server] [N=400]`: an order at C=1 on this
// checkout's code and on DIR's (another commit's working tree, its node_modules installed), each
// on a fresh `npm start` stack of its own, both up at once, the requests alternated one by one
// (A then B, then B then A), so the machine's drift, which moves a run's p50 by more than a few
// milliseconds from one minute to the next, lands on both sides alike. The empty update-with-start
// is measured on each stack the same way, so each side also has its ratio to the bare engine.
// Prints each side's p50/p99 and the difference of the p50s with a 95% bootstrap interval.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config';
import { pct, post } from './pool';
import { parseEngines, startStack, type Stack } from './stack';
import { barWorker, emptyUpdateWithStart } from './bar';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { against: { type: 'string' }, engine: { type: 'string', default: 'server' } },
});
if (!values.against) throw new Error('--against DIR: the other checkout to compare this one with');
const N = Number(positionals[0] ?? 400);
const WARMUP = 100;
const BOOTSTRAP = 2000;

interface Side {
  name: string;
  checkout: string;
  stack: Stack;
  key: string;
  agent: Agent;
  orders: number[];
  bar: number[];
}

/** The checkout's own CLI against its stack; its JSON answer. */
function cli(side: Pick<Side, 'checkout' | 'stack'>, args: string[]): Promise<Record<string, unknown>> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      cwd: side.checkout,
      env: { ...process.env, ...side.stack.env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('close', (code) => {
      if (code !== 0) return fail(new Error(`wholesale ${args[0]} in ${side.checkout} exited ${code}:\n${out}${err}`));
      done(JSON.parse(out) as Record<string, unknown>);
    });
  });
}

async function provision(side: Pick<Side, 'checkout' | 'stack'>): Promise<string> {
  const { accountId, apiKey } = (await cli(side, ['accounts', 'create', '--name', 'bench-ab'])) as {
    accountId: string;
    apiKey: string;
  };
  const amount = ((N + WARMUP) * 0.02 + 1).toFixed(2);
  await cli(side, [
    'balance',
    'adjust',
    '--account',
    accountId,
    '--amount',
    amount,
    '--note',
    'bench',
    '--by',
    'bench',
  ]);
  return apiKey;
}

const runId = randomUUID().slice(0, 8);

async function order(side: Side, tag: string): Promise<number> {
  const t0 = performance.now();
  const { status } = await post(
    side.agent,
    `${side.stack.apiUrl}/orders`,
    { authorization: `Bearer ${side.key}`, 'content-type': 'application/json' },
    JSON.stringify({ externalOrderId: `ab-${runId}-${tag}`, productId: 'prod_api_order_test', qty: 1 }),
  );
  if (status !== 200) throw new Error(`${side.name}: an order answered ${status}`);
  return performance.now() - t0;
}

/** `n` steps of `step` on each side, alternated one by one, the first side changing every step. */
async function alternate(sides: Side[], n: number, step: (side: Side, i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < n; i++) for (const side of i % 2 ? [...sides].reverse() : sides) await step(side, i);
}

const p50 = (xs: number[]) =>
  pct(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** The 95% interval of p50(b) − p50(a), resampling each side's latencies. */
function interval(a: number[], b: number[]): [number, number] {
  const pick = (xs: number[]) => Array.from(xs, () => xs[Math.floor(Math.random() * xs.length)]);
  const diffs = Array.from({ length: BOOTSTRAP }, () => p50(pick(b)) - p50(pick(a))).sort((x, y) => x - y);
  return [pct(diffs, 2.5), pct(diffs, 97.5)];
}

async function main() {
  const [engine] = parseEngines(values.engine);
  const config = loadConfig();
  const checkouts = [resolve(__dirname, '..'), resolve(values.against!)];
  const sides: Side[] = [];
  try {
    for (const [i, checkout] of checkouts.entries()) {
      process.stderr.write(`starting the ${engine} stack of ${checkout}…\n`);
      const stack = await startStack(engine, {}, checkout);
      const side = { name: i === 0 ? 'this' : 'against', checkout, stack };
      sides.push({
        ...side,
        key: await provision(side),
        agent: new Agent({ keepAlive: true, maxSockets: 1 }),
        orders: [],
        bar: [],
      });
    }
    process.stderr.write(`warming up, then ${N} orders on each, alternated…\n`);
    await alternate(sides, WARMUP, async (side, i) => void (await order(side, `w${i}`)));
    await alternate(sides, N, async (side, i) => void side.orders.push(await order(side, String(i))));

    Runtime.install({ logger: new DefaultLogger('WARN') });
    const bars = await Promise.all(
      sides.map(async (side) => {
        const address = side.stack.env.TEMPORAL_ADDRESS;
        const taskQueue = `bench-ab-${runId}`;
        const native = await NativeConnection.connect({ address });
        const connection = await Connection.connect({ address });
        const worker = await barWorker({ connection: native, taskQueue, config });
        const client = new Client({ connection });
        const running = worker.run();
        const uws = async (tag: string) => {
          const t0 = performance.now();
          await emptyUpdateWithStart(client, taskQueue, `bench-ab:${runId}:${tag}`);
          return performance.now() - t0;
        };
        return {
          side,
          uws,
          stop: async () => (worker.shutdown(), await running, await connection.close(), await native.close()),
        };
      }),
    );
    const barOf = new Map(bars.map((b) => [b.side, b.uws]));
    process.stderr.write(`the empty update-with-start, ${N} on each, alternated…\n`);
    await alternate(sides, WARMUP, async (side, i) => void (await barOf.get(side)!(`w${i}`)));
    await alternate(sides, N, async (side, i) => void side.bar.push(await barOf.get(side)!(String(i))));
    for (const b of bars) await b.stop();

    print(sides, engine);
  } finally {
    for (const side of sides) await side.stack.stop();
  }
}

function print(sides: Side[], engine: string): void {
  console.log(`\nbench/orders-ab  engine=${engine}  C=1  N=${N} each, alternated  (${new Date().toISOString()})\n`);
  console.log('side      order p50   order p99   engine p50   p50 ratio   checkout');
  for (const s of sides) {
    const sorted = [...s.orders].sort((a, b) => a - b);
    console.log(
      `${s.name.padEnd(8)} ${p50(s.orders).toFixed(1).padStart(10)} ${pct(sorted, 99).toFixed(1).padStart(11)} ${p50(s.bar).toFixed(1).padStart(12)} ${(p50(s.orders) / p50(s.bar)).toFixed(2).padStart(10)}x   ${s.checkout}`,
    );
  }
  const [a, b] = sides;
  const [lo, hi] = interval(a.orders, b.orders);
  const [barLo, barHi] = interval(a.bar, b.bar);
  console.log(
    `\norder p50, against − this: ${(p50(b.orders) - p50(a.orders)).toFixed(1)} ms (95% interval ${lo.toFixed(1)} to ${hi.toFixed(1)})`,
  );
  console.log(
    `engine p50, against − this: ${(p50(b.bar) - p50(a.bar)).toFixed(1)} ms (95% interval ${barLo.toFixed(1)} to ${barHi.toFixed(1)})`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
