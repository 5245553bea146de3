import { MikroORM, defineConfig, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities';
import { ConfigError } from '../config';
import { migrationsList } from './migrations';
import { currentRole, grantServiceRole } from './service-role';

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

/**
 * Applies pending migrations; returns the names of those applied now. With `migrationUrl`
 * (DATABASE_MIGRATION_URL) they run as that role, the schema's owner, which then grants the role
 * of `orm` (DATABASE_URL) what the service needs (./service-role). Without it they run as the
 * role of `orm`; one that owns nothing can still start once nothing is pending.
 */
export async function migrate(orm: Orm, opts: { migrationUrl?: string; quiet?: boolean } = {}): Promise<string[]> {
  if (!opts.migrationUrl) {
    try {
      return (await orm.getMigrator().up()).map((m) => m.name);
    } catch (err) {
      if ((err as { code?: string }).code !== '42501') throw err;
      throw new ConfigError("DATABASE_URL: this role may not change the schema and migrations are pending: run them as the schema's owner with DATABASE_MIGRATION_URL (npx wholesale migrate)");
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
