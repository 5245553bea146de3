import type { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from 'pino';
import { safeText } from '../domain/text';
import { workerUpGauge } from '../metrics/registry';

export type WorkerPhase = 'starting' | 'running' | 'restarting' | 'stopping' | 'stopped' | 'gave_up';

export interface WorkerHealth {
  phase: WorkerPhase;
  /** Times the worker was started again after it failed or could not be created. */
  restarts: number;
  /** Our words plus the error's message, made safe; never a stack. */
  lastError: string | null;
}

export interface SupervisorOptions {
  /** Creates a connected worker; called again for every restart. */
  create: () => Promise<{ worker: Worker; connection: NativeConnection }>;
  logger: Logger;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /**
   * Consecutive failed starts or runs after which the supervisor gives up and calls `onGiveUp`
   * (a lone worker process exits non-zero for its own supervisor). Unset: never gives up.
   */
  maxConsecutiveFailures?: number;
  onGiveUp?: (err: unknown) => void;
  /** A run that lasted this long counts as healthy: the next failure starts the backoff anew. */
  healthyAfterMs?: number;
  /**
   * Awaited each time a worker is about to poll (its first start and every restart), with the
   * phase already `running`: the process announces the worker (its heartbeat row) before the worker
   * answers anything, so whoever sees an answer of it can also see that it runs.
   */
  beforePolling?: () => Promise<void>;
}

/**
 * Keeps a Temporal worker running in this process. A worker that fails (a core error, a lost
 * connection, a server that is down at start) is logged as one structured line and started
 * again with capped exponential backoff, while the rest of the process (the API) keeps serving.
 * Workflows and activities lost with a worker are retried by Temporal on its own schedule.
 */
export class WorkerSupervisor {
  private phaseNow: WorkerPhase = 'starting';
  private readonly up = workerUpGauge();
  private restarts = 0;
  private lastError: string | null = null;
  private current?: Worker;
  private loop?: Promise<void>;
  private wake?: () => void;
  private firstStart?: { resolve: () => void; promise: Promise<void> };

  constructor(private readonly opts: SupervisorOptions) {}

  /** Starts the loop; resolves once a worker is running for the first time (or the loop ends). */
  start(): Promise<void> {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.firstStart = { resolve, promise };
    this.loop = this.run();
    return promise;
  }

  health(): WorkerHealth {
    return { phase: this.phaseNow, restarts: this.restarts, lastError: this.lastError };
  }

  get worker(): Worker | undefined {
    return this.current;
  }

  async stop(): Promise<void> {
    if (this.phaseNow === 'stopped' || this.phaseNow === 'gave_up') return this.loop;
    // The Temporal runtime may already be draining the worker on SIGINT/SIGTERM.
    this.setPhase('stopping');
    this.wake?.();
    if (this.current?.getState() === 'RUNNING') this.current.shutdown();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { logger } = this.opts;
    const min = this.opts.minBackoffMs ?? 500;
    const max = this.opts.maxBackoffMs ?? 30_000;
    const healthyAfter = this.opts.healthyAfterMs ?? 60_000;
    let consecutive = 0;
    while (this.phaseNow !== 'stopping') {
      let connection: NativeConnection | undefined;
      let startedAt: number | undefined;
      let failure: unknown;
      try {
        const created = await this.opts.create();
        connection = created.connection;
        this.current = created.worker;
        if (this.isStopping()) break;
        this.setPhase('running');
        await this.opts.beforePolling?.();
        if (this.isStopping()) break;
        startedAt = Date.now();
        const running = created.worker.run();
        if (this.restarts > 0) logger.info({ restarts: this.restarts }, 'temporal worker running again');
        this.firstStart?.resolve();
        await running;
        // A clean shutdown (asked of the worker itself) is not a failure: nothing to restart.
        logger.info('temporal worker stopped');
        break;
      } catch (err) {
        failure = err;
      } finally {
        this.current = undefined;
        await connection?.close().catch(() => undefined);
      }
      if (this.isStopping()) break;

      if (startedAt !== undefined && Date.now() - startedAt >= healthyAfter) consecutive = 0;
      consecutive++;
      this.lastError = safeText(
        failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure),
        500,
      );
      const limit = this.opts.maxConsecutiveFailures;
      if (limit !== undefined && consecutive >= limit) {
        this.setPhase('gave_up');
        logger.error(
          { err: { type: (failure as Error)?.name, message: this.lastError }, failures: consecutive },
          'temporal worker cannot recover; giving up',
        );
        this.firstStart?.resolve();
        this.opts.onGiveUp?.(failure);
        return;
      }
      const backoffMs = Math.min(max, min * 2 ** (consecutive - 1));
      this.setPhase('restarting');
      this.restarts++;
      logger.error(
        {
          err: { type: (failure as Error)?.name, message: this.lastError },
          restartInMs: backoffMs,
          restarts: this.restarts,
        },
        'temporal worker failed; restarting',
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoffMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    this.setPhase('stopped');
    this.firstStart?.resolve();
  }

  private setPhase(phase: WorkerPhase): void {
    this.phaseNow = phase;
    this.up.set(phase === 'running' ? 1 : 0);
  }

  private isStopping(): boolean {
    return this.phaseNow === 'stopping';
  }
}
