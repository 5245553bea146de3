import { Client } from 'pg';
import { MikroORM, defineConfig, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities/all-entities';
import { ConfigError } from '../config';
import { migrationsList } from './migrations';
import { currentRole, grantServiceRole } from './service-role';

export type Orm = MikroORM;

export function ormConfig(
  databaseUrl: string,
  overrides: Partial<Options> = {},
  opts: { quietMigrations?: boolean } = {},
): Options {
  return defineConfig({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    // Migrations are listed in code so they run the same under tsx, jest and compiled output.
    migrations: {
      migrationsList,
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: opts.quietMigrations ?? false,
    },
    // While Postgres is down a request waits at most a few seconds for a connection, then answers
    // a retryable 503 instead of hanging.
    pool: { min: 0, max: 20, acquireTimeoutMillis: 5000 },
    debug: false,
    ...overrides,
  });
}

export async function initOrm(
  databaseUrl: string,
  overrides: Partial<Options> = {},
  opts: { quietMigrations?: boolean } = {},
): Promise<Orm> {
  return MikroORM.init(ormConfig(databaseUrl, overrides, opts));
}

/** Asks Postgres for one trivial answer, on a connection of the pool (the readiness probe). */
export async function pingDatabase(orm: Orm): Promise<void> {
  await orm.em.fork().execute('select 1');
}

/** The Postgres advisory lock every migration run holds (`pg_advisory_lock(hashtext(…))`). */
export const MIGRATION_LOCK = 'wholesale.migrations';

/**
 * Applies pending migrations; returns the names of those applied now. Several processes may start
 * at once on one database (replicas, the chart's migration Job, `npx wholesale`): each takes the
 * advisory lock on a session of its own first, so one migrates while the others wait, then find
 * nothing left to do. The lock goes with its session, so a migrator that dies never leaves it held.
 * With `migrationUrl` (DATABASE_MIGRATION_URL) they run as that role, the schema's owner, which
 * then grants the role of `orm` (DATABASE_URL) what the service needs (./service-role). Without it
 * they run as the role of `orm`; one that owns nothing can still start once nothing is pending.
 */
export async function migrate(
  orm: Orm,
  opts: { migrationUrl?: string; quiet?: boolean; onWait?: () => void } = {},
): Promise<string[]> {
  const session = new Client({ connectionString: orm.config.get('clientUrl') });
  await session.connect();
  try {
    const { rows } = await session.query<{ free: boolean }>('select pg_try_advisory_lock(hashtext($1)) as free', [
      MIGRATION_LOCK,
    ]);
    if (!rows[0].free) {
      opts.onWait?.();
      await session.query('select pg_advisory_lock(hashtext($1))', [MIGRATION_LOCK]);
    }
    return await applyMigrations(orm, opts);
  } finally {
    await session.end();
  }
}

async function applyMigrations(orm: Orm, opts: { migrationUrl?: string; quiet?: boolean }): Promise<string[]> {
  if (!opts.migrationUrl) {
    try {
      return (await orm.getMigrator().up()).map((m) => m.name);
    } catch (err) {
      if ((err as { code?: string }).code !== '42501') throw err;
      throw new ConfigError(
        "DATABASE_URL: this role may not change the schema and migrations are pending: run them as the schema's owner with DATABASE_MIGRATION_URL (npx wholesale migrate)",
      );
    }
  }
  const owner = await initOrm(opts.migrationUrl, { pool: { min: 0, max: 1 } }, { quietMigrations: opts.quiet });
  try {
    const applied = (await owner.getMigrator().up()).map((m) => m.name);
    await grantServiceRole(owner.em.fork(), await currentRole(orm.em.fork()));
    return applied;
  } finally {
    await owner.close();
  }
}

/** Migrations of this code that the database lacks, read without writing (the migrator would create its table). */
export async function pendingMigrations(orm: Orm): Promise<string[]> {
  const table = orm.config.get('migrations').tableName ?? 'mikro_orm_migrations';
  const em = orm.em.fork();
  const [{ present }] = await em.execute<{ present: boolean }[]>('select to_regclass(?) is not null as present', [
    table,
  ]);
  const applied = present ? await em.execute<{ name: string }[]>(`select name from "${table}"`) : [];
  const done = new Set(applied.map((row) => row.name));
  return migrationsList.map((m) => m.name).filter((name) => !done.has(name));
}
