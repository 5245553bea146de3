import { createServer } from 'node:net';
import { Runtime, type Logger as TemporalLogger, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger } from 'pino';
import { safeText } from '../domain/text';

// The Temporal runtime of a service process: its logs (the SDK's, workflow and activity
// `log.*`, and the Rust core's, forwarded) go into the service's pino logger as one JSON object
// per line with the workflow id, run id and activity type as fields; the core's own metrics are
// exported in Prometheus format on a loopback port that /metrics serves alongside ours.

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Fields worth keeping from the SDK's metadata; a task token is an opaque secret-ish blob, dropped. */
function fields(meta: LogMetadata | undefined): Record<string, unknown> {
  if (!meta) return {};
  const { taskToken: _token, error, failure, ...rest } = meta as Record<string, unknown>;
  const err = (error ?? failure) as { name?: string; message?: string; stack?: string; type?: string } | undefined;
  return {
    ...rest,
    ...(err
      ? {
          err: {
            type: err.type ?? err.name,
            message: safeText(String(err.message ?? err), 1000),
            stack: err.stack ? safeText(err.stack, 4000) : undefined,
          },
        }
      : {}),
  };
}

export class PinoTemporalLogger implements TemporalLogger {
  constructor(private readonly logger: Logger) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    this.logger[LEVELS[level] ?? 'info']({ temporal: true, ...fields(meta) }, safeText(message, 2000));
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

let coreMetrics: string | undefined;

/**
 * Installs the process's Temporal runtime (once, before any connection). `metricsPort` exposes
 * the core's metrics on 127.0.0.1 for /metrics to include. Signals are left to the process
 * (src/processes.ts), which stops everything in order.
 */
export function installRuntime(opts: { logger: Logger; coreMetricsPort?: number }): void {
  Runtime.install({
    logger: new PinoTemporalLogger(opts.logger),
    shutdownSignals: [],
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(opts.coreMetricsPort
        ? {
            metrics: {
              prometheus: {
                bindAddress: `127.0.0.1:${opts.coreMetricsPort}`,
                countersTotalSuffix: true,
                useSecondsForDurations: true,
              },
            },
          }
        : {}),
    },
  });
  coreMetrics = opts.coreMetricsPort ? `http://127.0.0.1:${opts.coreMetricsPort}/metrics` : undefined;
}

/** Where the core's Prometheus exporter answers in this process, if it was installed with one. */
export const coreMetricsUrl = () => coreMetrics;

/** A port free on 127.0.0.1 right now (for the core's exporter when none is configured). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
