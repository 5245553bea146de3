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
    pool: { min: 0, max: 20 },
    debug: false,
    ...overrides,
  });
}

export async function initOrm(databaseUrl: string, overrides: Partial<Options> = {}, opts: { quietMigrations?: boolean } = {}): Promise<Orm> {
  return MikroORM.init(ormConfig(databaseUrl, overrides, opts));
}

export async function migrate(orm: Orm): Promise<void> {
  await orm.getMigrator().up();
}
