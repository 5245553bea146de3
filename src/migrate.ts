// `npm run migrate`: applies the pending migrations under the migration lock and exits, 0 when the
// database is up to date. The Helm chart runs it as a pre-install/pre-upgrade Job, with the
// processes at MIGRATE_ON_START=false.
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
    const applied = await migrate(orm, { onWait: () => logger.info('another process is migrating the database; waiting for it') });
    logger.info({ migrations: applied }, applied.length > 0 ? 'migrations applied' : 'the database is up to date');
  } finally {
    await orm.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => exitCannotStart('migrate', err),
);
