// A whole `npm start` stack in a child process, on its own ports and state dir, for the benches
// that compare the two engines (the dev server and the production server on Postgres) in one run.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freeLowPort } from '../src/dev/ports';

export type Engine = 'dev' | 'server';

export interface Stack {
  engine: Engine;
  /** The environment a bench process uses to reach this stack (its config, as `loadConfig` reads it). */
  env: Record<string, string>;
  apiUrl: string;
  metricsUrl: string;
  stop(): Promise<void>;
}

export function parseEngines(arg: string | undefined): Engine[] {
  const engines = (arg ?? 'dev').split(',').map((e) => e.trim());
  for (const e of engines)
    if (e !== 'dev' && e !== 'server') throw new Error(`--engines takes dev and/or server, not "${e}"`);
  return engines as Engine[];
}

/**
 * Starts `npm start` with `DEV_TEMPORAL=<engine>` and waits until it prints its API line; `checkout`
 * is the working tree whose code it runs (this one unless given: bench/orders-ab.ts runs two).
 */
export async function startStack(
  engine: Engine,
  extra: Record<string, string> = {},
  checkout = resolve(__dirname, '..'),
): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), `bench-${engine}-`));
  chmodSync(dir, 0o755); // as root, Postgres runs as `postgres` and must reach its data dir
  const ports = {
    PORT: await freeLowPort(),
    EMBEDDED_PG_PORT: await freeLowPort(),
    TEMPORAL_PORT: await freeLowPort(),
    TEMPORAL_UI_PORT: await freeLowPort(),
    METRICS_PORT: await freeLowPort(),
  };
  const env: Record<string, string> = {
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    STATE_DIR: join(dir, 'state'),
    DEV_TEMPORAL: engine,
    LOG_LEVEL: 'warn',
    // The benches place orders from 16 keys at a time, well past a reseller's per-key minute.
    RATE_LIMIT_PER_MINUTE: '1000000',
    ...extra,
  };
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k, v]) =>
        v !== undefined &&
        !(k in env) &&
        k !== 'TEMPORAL_PAYLOAD_KEYS' &&
        k !== 'DATABASE_URL' &&
        k !== 'TEMPORAL_ADDRESS',
    ),
  ) as Record<string, string>;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: checkout,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`${engine} stack did not start in 10 minutes:\n${output.slice(-2000)}`)),
      600_000,
    );
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Wholesale API')) {
        clearTimeout(timer);
        done();
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${engine} stack exited (${code}) before it started:\n${output.slice(-2000)}`));
    });
  });
  child.removeAllListeners('exit');
  // The bench processes find Postgres and Temporal the way `npm start` placed them.
  const reach = {
    ...env,
    DATABASE_URL: `postgres://postgres:wholesale@127.0.0.1:${ports.EMBEDDED_PG_PORT}/wholesale`,
    TEMPORAL_ADDRESS: `127.0.0.1:${ports.TEMPORAL_PORT}`,
    BENCH_API_URL: `http://127.0.0.1:${ports.PORT}/wholesale/v1`,
  };
  return {
    engine,
    env: reach,
    apiUrl: reach.BENCH_API_URL,
    metricsUrl: `http://127.0.0.1:${ports.METRICS_PORT}/metrics`,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
