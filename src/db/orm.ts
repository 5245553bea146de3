import { MikroORM, defineConfig, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities';
import { migrationsList } from './migrations';

export type Orm = MikroORM;

export function ormConfig(databaseUrl: string, overrides: Partial<Options> = {}, opts: { quietMigrations?: boolean } = {}): Options {
  return defineConfig({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    // Migrations are listed in code so they run the same under tsx, jest and compiled output.
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: opts.quietMigrations ?? false },
    // While Postgres is down a request waits at most a few seconds for a connection, then answers
    // a retryable 503 instead of hanging.
    pool: { min: 0, max: 20, acquireTimeoutMillis: 5000 },
    debug: false,
    ...overrides,
  });
}

export async function initOrm(databaseUrl: string, overrides: Partial<Options> = {}, opts: { quietMigrations?: boolean } = {}): Promise<Orm> {
  return MikroORM.init(ormConfig(databaseUrl, overrides, opts));
}

/** Asks Postgres for one trivial answer, on a connection of the pool (the readiness probe). */
export async function pingDatabase(orm: Orm): Promise<void> {
  await orm.em.fork().execute('select 1');
}

/** Applies pending migrations; returns the names of those applied now. */
export async function migrate(orm: Orm): Promise<string[]> {
  return (await orm.getMigrator().up()).map((m) => m.name);
}
