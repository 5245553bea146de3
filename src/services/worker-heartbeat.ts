import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Orm } from '../db/orm';
import { beatWorker, forgetWorker, pruneWorkerHeartbeats } from '../db/worker-heartbeats-store';
import type { WorkerHealth } from '../temporal/worker-supervisor';

// The worker process's side of admission control: while its Temporal worker runs, a row in
// `worker_heartbeats` beaten every WORKER_HEARTBEAT_MS, with how long its workflow tasks waited in
// the task queue since the last beat (schedule-to-start, from the SDK core's own metrics). The API
// processes read these rows (./worker-watch.ts): no fresh row means no worker polls, and placements
// are refused at once instead of waiting for PLACEMENT_TIMEOUT_MS.
//
// Why rows in Postgres: every API process already reads Postgres, and the database's clock dates
// every beat. Temporal's own view (DescribeTaskQueue's pollers and their last access time) only
// moves when a poll arrives, and a poll on an idle queue waits up to a minute, so a killed worker
// stays listed for that long; a restart of the worker inside its process is not visible there at
// all. A worker that stops (shutdown, or its Temporal worker failing and restarting) removes its
// row at once; a killed one stops beating and its row goes stale.

export interface WorkerHeartbeatOptions {
  orm: Orm;
  taskQueue: string;
  /** The supervisor of this process's worker: a row is kept only while its phase is `running`. */
  worker: { health(): WorkerHealth };
  everyMs: number;
  logger: Logger;
  /** The SDK core's Prometheus exporter in this process, when there is one. */
  coreMetricsUrl?: string;
}

export class WorkerHeartbeat {
  private readonly id = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private timer?: NodeJS.Timeout;
  private beating = false;
  private inFlight?: Promise<void>;
  private lastWaits?: Waits;
  private queueMs: number | null = null;
  private failing = false;

  constructor(private readonly opts: WorkerHeartbeatOptions) {}

  /** Starts beating; resolves once the first beat is written (or failed). */
  async start(): Promise<void> {
    await pruneWorkerHeartbeats(this.opts.orm.em.fork()).catch(() => undefined);
    this.timer = setInterval(() => this.tick(), this.opts.everyMs);
    this.timer.unref();
    this.tick();
    await this.inFlight;
  }

  /**
   * Beats now, for a worker about to poll, waiting for the row at most one beat's time: a slow
   * database delays the worker's first poll by that much at worst, never more.
   */
  async beatNow(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise((resolve) => (timer = setTimeout(resolve, this.opts.everyMs)));
    // A beat already under way may have read the phase before the worker came back: one more after it.
    await Promise.race([this.inFlight, late]);
    this.tick();
    await Promise.race([this.inFlight, late]);
    clearTimeout(timer);
  }

  /** Stops beating and removes the row, so the API processes stop sending placements here first. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
    await forgetWorker(this.opts.orm.em.fork(), this.id).catch(() => undefined);
  }

  private tick(): void {
    // One beat at a time: a slow database skips beats rather than piling them up.
    if (this.inFlight) return;
    this.inFlight = this.beat().finally(() => (this.inFlight = undefined));
  }

  private async beat(): Promise<void> {
    const em = this.opts.orm.em.fork();
    try {
      if (this.opts.worker.health().phase !== 'running') {
        if (this.beating) await forgetWorker(em, this.id);
        this.beating = false;
        this.lastWaits = undefined;
        return;
      }
      await beatWorker(em, { id: this.id, taskQueue: this.opts.taskQueue, scheduleToStartMs: this.queueMs });
      this.beating = true;
      // For the next beat, so that reading the metrics never delays a beat.
      this.queueMs = await this.scheduleToStartMs();
      if (this.failing) this.opts.logger.info('worker heartbeat written again');
      this.failing = false;
    } catch (err) {
      // Postgres out of reach: the API processes cannot read the row either; say it once.
      if (!this.failing)
        this.opts.logger.warn(
          { err: { message: (err as Error).message } },
          'worker heartbeat not written; retrying every beat',
        );
      this.failing = true;
    }
  }

  /** The mean workflow-task schedule-to-start since the last beat (null: unknown, or no task started). */
  private async scheduleToStartMs(): Promise<number | null> {
    if (!this.opts.coreMetricsUrl) return null;
    try {
      const res = await fetch(this.opts.coreMetricsUrl, { signal: AbortSignal.timeout(this.opts.everyMs / 2) });
      const now = workflowTaskWaits(await res.text());
      const before = this.lastWaits;
      this.lastWaits = now;
      if (!before || now.count <= before.count) return null;
      return ((now.sumSeconds - before.sumSeconds) / (now.count - before.count)) * 1000;
    } catch {
      return null;
    }
  }
}

interface Waits {
  sumSeconds: number;
  count: number;
}

const WAITS_RE =
  /^temporal_workflow_task_schedule_to_start_latency(?:_seconds)?_(sum|count)(?:\{[^}]*\})? ([0-9.eE+-]+)$/gm;

/** The workflow-task schedule-to-start histogram's sum and count, over every task queue of the process (its own and its sticky one). */
export function workflowTaskWaits(prometheusText: string): Waits {
  const waits: Waits = { sumSeconds: 0, count: 0 };
  for (const m of prometheusText.matchAll(WAITS_RE)) {
    if (m[1] === 'sum') waits.sumSeconds += Number(m[2]);
    else waits.count += Number(m[2]);
  }
  return waits;
}
