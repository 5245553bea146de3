// `npm run bench:orders -- --engines dev,server`: bench/orders on a fresh stack per engine, both
// stacks up at once and the rounds alternated between them (the first engine of a round changes
// every round), so a slow minute on the machine lands on both. Prints each engine's medians over
// the rounds and the ratios of the README's benchmark table.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { parseEngines, startStack, type Engine, type Stack } from './stack';

type Phase = { rate: number; p50: number; p99: number; failures: number };
type Summary = Record<string, Phase>;

const HTTP = 'HTTP order (API+Temporal+Postgres)';
const ENGINE = 'empty Temporal update-with-start';

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** One bench/orders run against `stack`, its summary read from the BENCH_RESULT line. */
function runOnce(stack: Stack, n: number, c: number): Promise<Summary> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(__dirname, 'orders.ts'), String(n), String(c)], {
      env: { ...process.env, ...stack.env, BENCH_JSON: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
      if (code !== 0 || !line)
        return fail(new Error(`bench/orders on ${stack.engine} (C=${c}) exited ${code}:\n${out.slice(-1500)}`));
      done(JSON.parse(line.slice('BENCH_RESULT '.length)) as Summary);
    });
  });
}

export async function compareEngines(args: string[]): Promise<void> {
  const engines = parseEngines(flag(args, '--engines'));
  const rounds = Number(flag(args, '--rounds') ?? 3);
  const positional = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
  const n = Number(positional[0] ?? 300);
  const concurrencies = (positional[1] ?? '1,16').split(',').map(Number);
  const stacks: Stack[] = [];
  try {
    for (const engine of engines) {
      process.stderr.write(`starting the ${engine} stack…\n`);
      stacks.push(await startStack(engine));
    }
    const results = new Map<string, Summary[]>();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 ? [...stacks].reverse() : stacks;
      for (const stack of order) {
        for (const c of concurrencies) {
          process.stderr.write(`round ${round + 1}/${rounds}: ${stack.engine} C=${c}\n`);
          const key = `${stack.engine}|${c}`;
          results.set(key, [...(results.get(key) ?? []), await runOnce(stack, n, c)]);
        }
      }
    }
    print(engines, concurrencies, n, rounds, results);
  } finally {
    for (const s of stacks) await s.stop();
  }
}

function print(
  engines: Engine[],
  concurrencies: number[],
  n: number,
  rounds: number,
  results: Map<string, Summary[]>,
): void {
  console.log(
    `\nbench/orders --engines ${engines.join(',')}  N=${n}  rounds=${rounds}  (${new Date().toISOString()}; medians over rounds)\n`,
  );
  console.log('engine  C   order p50   engine p50   p50 ratio   order/s   engine/s   rate ratio   order p99');
  for (const engine of engines) {
    for (const c of concurrencies) {
      const runs = results.get(`${engine}|${c}`) ?? [];
      const m = (phase: string, k: keyof Phase) => median(runs.map((r) => r[phase][k]));
      const ratioP50 = median(runs.map((r) => r[HTTP].p50 / r[ENGINE].p50));
      const ratioRate = median(runs.map((r) => r[HTTP].rate / r[ENGINE].rate));
      console.log(
        `${engine.padEnd(7)} ${String(c).padStart(2)} ${m(HTTP, 'p50').toFixed(1).padStart(10)} ${m(ENGINE, 'p50').toFixed(1).padStart(12)} ${ratioP50.toFixed(2).padStart(10)}x ${m(HTTP, 'rate').toFixed(1).padStart(9)} ${m(ENGINE, 'rate').toFixed(1).padStart(10)} ${ratioRate.toFixed(2).padStart(11)}x ${m(HTTP, 'p99').toFixed(1).padStart(11)}`,
      );
    }
  }
  console.log(
    "\nratios are the medians of each round's own ratio (order against the empty update-with-start of the same run)",
  );
}
