import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from './harness';

// A real Postgres server of a test's own, in its own process (test/helpers/pg-server.ts), that the
// test can stop and start again on the same port and data: for readiness and fault tests.
export interface StoppablePostgres {
  /** URL of the `postgres` database; `urlFor` gives another database on the same server. */
  url: string;
  urlFor(database: string): string;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const root = resolve(__dirname, '..', '..');

export async function startStoppablePostgres(): Promise<StoppablePostgres> {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'wholesale-pg-')), 'data');
  const port = await freePort();
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'test', 'helpers', 'pg-server.ts'), dataDir, String(port)],
    {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (expected: string): Promise<string> => {
    const { value, done } = await lines.next();
    if (done || !String(value).startsWith(expected))
      throw new Error(`pg-server: expected "${expected}", got ${done ? 'its exit' : `"${value}"`}\n${stderr}`);
    return String(value);
  };
  const url = (await next('ready ')).slice('ready '.length);
  const command = async (c: string, answer: string) => {
    child.stdin.write(`${c}\n`);
    await next(answer);
  };
  return {
    url,
    urlFor: (database) => url.replace(/\/[^/]*$/, `/${database}`),
    stop: () => command('stop', 'stopped'),
    start: () => command('start', 'started'),
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin.write('exit\n');
      await exited;
    },
  };
}
