import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client as PgClient } from 'pg';
import { MIGRATION_LOCK } from '../../src/db/orm';
import { migrationsList } from '../../src/db/migrations';
import { createTestDatabase, freePort } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { exited, killed } from '../helpers/processes';
import { output, projectRoot } from '../helpers/production-app';

// Migrations run once (docs/operations.md, *Migrations*): every process takes a Postgres advisory
// lock around the migrator, so of several replicas starting together on an empty database one
// migrates and the others wait for it, then find nothing to do; MikroORM's table records each
// migration once. `npm run migrate` (the chart's Job) exits 0 when the database is up to date, and
// a process at MIGRATE_ON_START=false refuses a database that lacks a migration.
const taskQueue = `migrate-${randomBytes(4).toString('hex')}`;
const children: ChildProcess[] = [];

afterAll(() => Promise.all(children.map(killed)));

interface Proc {
  role: 'api' | 'worker';
  child: ChildProcess;
  log: () => string;
  ready: number;
}

async function startProcess(role: 'api' | 'worker', databaseUrl: string): Promise<Proc> {
  const ready = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', `src/${role}.ts`], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: taskQueue,
      ...(role === 'api' ? { PORT: String(await freePort()) } : {}),
      METRICS_PORT: String(ready),
      RECONCILE_SECONDS: '0',
      LOG_LEVEL: 'info',
    },
  });
  children.push(child);
  return { role, child, log: output(child), ready };
}

/** The JSON lines a process logged with this message. */
function lines(p: Proc, msg: string): Record<string, unknown>[] {
  return p
    .log()
    .split('\n')
    .flatMap((line) => {
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        return parsed.msg === msg ? [parsed] : [];
      } catch {
        return [];
      }
    });
}

async function query<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const pg = new PgClient({ connectionString: url });
  await pg.connect();
  try {
    return (await pg.query(sql, params)).rows as T[];
  } finally {
    await pg.end();
  }
}

function runMigrate(databaseUrl: string): Promise<{ code: number | null; log: string }> {
  const child = spawn('npm', ['run', '--silent', 'migrate'], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: databaseUrl },
  });
  const log = output(child);
  return exited(child).then(({ code }) => ({ code, log: log() }));
}

test('three API processes and two workers started at once on an empty database: one migrates while the others wait, all come up, each migration is recorded once', async () => {
  const databaseUrl = await createTestDatabase();
  // This session plays a migrator already at work when the five start, so that every one of them
  // meets the lock, whatever the timing.
  const holder = new PgClient({ connectionString: databaseUrl });
  await holder.connect();
  await holder.query('select pg_advisory_lock(hashtext($1))', [MIGRATION_LOCK]);
  const procs = await Promise.all([
    ...['api', 'api', 'api', 'worker', 'worker'].map((role) => startProcess(role as 'api' | 'worker', databaseUrl)),
  ]);
  try {
    await eventually(
      async () => {
        const dead = procs.find((p) => p.child.exitCode !== null);
        if (dead) throw new Error(`${dead.role} exited:\n${dead.log()}`);
        const [{ waiting }] = await query<{ waiting: number }>(
          databaseUrl,
          "select count(*)::int as waiting from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())",
        );
        return waiting === 5;
      },
      120_000,
      250,
      'all five processes waiting for the migration lock',
    );
    // Nobody migrated behind the lock's back.
    expect(await query(databaseUrl, "select to_regclass('mikro_orm_migrations') as t")).toEqual([{ t: null }]);
    for (const p of procs)
      expect(lines(p, 'another process is migrating the database; waiting for it')).toHaveLength(1);
  } finally {
    await holder.end();
  }

  for (const p of procs) {
    await eventually(
      async () => {
        if (p.child.exitCode !== null) throw new Error(`${p.role} exited:\n${p.log()}`);
        return (await fetch(`http://127.0.0.1:${p.ready}/readyz`)).status === 200;
      },
      120_000,
      250,
      `${p.role} ready`,
    );
  }
  const migrators = procs.filter((p) => lines(p, 'migrations applied').length > 0);
  expect(migrators).toHaveLength(1);
  expect(lines(migrators[0], 'migrations applied')[0].migrations).toEqual(migrationsList.map((m) => m.name));
  const recorded = await query<{ name: string; times: number }>(
    databaseUrl,
    'select name, count(*)::int as times from mikro_orm_migrations group by name order by name',
  );
  expect(recorded).toEqual(
    migrationsList.map((m) => ({ name: m.name, times: 1 })).sort((a, b) => a.name.localeCompare(b.name)),
  );

  // The chart's Job on a database that is up to date: nothing to do, exit 0.
  const again = await runMigrate(databaseUrl);
  expect(again.code).toBe(0);
  expect(again.log).toContain('the database is up to date');
  const [{ rows }] = await query<{ rows: number }>(
    databaseUrl,
    'select count(*)::int as rows from mikro_orm_migrations',
  );
  expect(rows).toBe(migrationsList.length);
}, 300_000);

test('MIGRATE_ON_START=false refuses a database that lacks migrations, naming `npm run migrate`; after it, the database is complete', async () => {
  const databaseUrl = await createTestDatabase();
  const api = spawn(process.execPath, ['--import', 'tsx', 'src/api.ts'], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS,
      PORT: String(await freePort()),
      MIGRATE_ON_START: 'false',
    },
  });
  children.push(api);
  const log = output(api);
  expect((await exited(api)).code).toBe(1);
  expect(log()).toContain(
    `MIGRATE_ON_START: false, and the database lacks ${migrationsList.length} migration(s) of this version`,
  );
  expect(log()).toContain('run `npm run migrate` first');
  // Read without writing: not even MikroORM's table was created.
  expect(await query(databaseUrl, "select to_regclass('mikro_orm_migrations') as t")).toEqual([{ t: null }]);

  const first = await runMigrate(databaseUrl);
  expect(first.code).toBe(0);
  expect(first.log).toContain('migrations applied');
  const [{ rows }] = await query<{ rows: number }>(
    databaseUrl,
    'select count(*)::int as rows from mikro_orm_migrations',
  );
  expect(rows).toBe(migrationsList.length);
}, 120_000);
