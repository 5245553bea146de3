// The production Temporal server's two Postgres databases: created when missing, their schemas
// set up or upgraded with temporal-sql-tool, and the cluster membership a killed server left behind.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client as PgClient } from 'pg';
import type { PostgresTarget } from './temporal-server-config';

export async function ensureDatabases(pg: PostgresTarget, names: string[]): Promise<void> {
  const client = new PgClient({
    host: pg.host,
    port: pg.port,
    user: pg.user,
    password: pg.password,
    database: pg.adminDatabase ?? 'postgres',
  });
  await client.connect();
  try {
    for (const name of names) {
      const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
      if (exists.rowCount === 0) {
        try {
          await client.query(`create database "${name.replace(/"/g, '""')}"`);
        } catch (err) {
          // Another process created it meanwhile.
          if ((err as { code?: string }).code !== '42P04') throw err;
        }
      }
    }
  } finally {
    await client.end();
  }
}

/**
 * Forgets the cluster members recorded in the database. This server is a single process and owns
 * its databases, and its process has exited when this runs: a member left there by a SIGKILL
 * would otherwise keep its history shards and task queues (requests to them hang) until its
 * heartbeat expires, about a minute later.
 */
export async function forgetMembers(pg: PostgresTarget, database: string): Promise<void> {
  const client = new PgClient({ host: pg.host, port: pg.port, user: pg.user, password: pg.password, database });
  await client.connect();
  try {
    await client.query('delete from cluster_membership');
  } finally {
    await client.end();
  }
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let output = '';
    const keep = (d: Buffer) => (output = (output + String(d)).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolveRun() : reject(new Error(`${bin} ${args.join(' ')} exited ${code}: ${output.trim()}`)),
    );
  });
}

/** setup-schema (idempotent at version 0.0) and update-schema to the newest version, from the schema files embedded in the tool. */
export async function setupSchemas(
  binDir: string,
  pg: PostgresTarget,
  databases: { default: string; visibility: string },
): Promise<void> {
  const tool = join(binDir, 'temporal-sql-tool');
  // The password travels in the environment, not on the command line.
  const env = { ...process.env, SQL_PASSWORD: pg.password ?? '' };
  const base = ['--plugin', 'postgres12', '--ep', pg.host, '-p', String(pg.port), '-u', pg.user];
  for (const [database, schema] of [
    [databases.default, 'postgresql/v12/temporal'],
    [databases.visibility, 'postgresql/v12/visibility'],
  ] as const) {
    await run(tool, [...base, '--db', database, 'setup-schema', '-v', '0.0'], env);
    await run(tool, [...base, '--db', database, 'update-schema', '--schema-name', schema], env);
  }
}
