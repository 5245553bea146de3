// `npm run migrate`: applies the pending migrations under the migration lock (as
// DATABASE_MIGRATION_URL's role when set) and exits, 0 when the database is up to date, logging as
// the service's processes do. The Helm chart runs it as a pre-install/pre-upgrade Job, with the
// processes at MIGRATE_ON_START=false. `npx wholesale migrate` does the same for a person.
import { ConfigError, loadConfig } from './config';
import { initOrm, migrate } from './db/orm';
import { createLogger } from './logger';
import { exitCannotStart } from './processes';

async function main() {
  const config = loadConfig();
  if (!config.DATABASE_URL) throw new ConfigError('Invalid configuration:\n  DATABASE_URL: required to migrate');
  const logger = createLogger(config.LOG_LEVEL);
  const orm = await initOrm(config.DATABASE_URL, {}, { quietMigrations: true });
  try {
    const onWait = () => logger.info('another process is migrating the database; waiting for it');
    const applied = await migrate(orm, { migrationUrl: config.DATABASE_MIGRATION_URL, quiet: true, onWait });
    logger.info({ migrations: applied }, applied.length > 0 ? 'migrations applied' : 'the database is up to date');
  } finally {
    await orm.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => exitCannotStart('migrate', err),
);
