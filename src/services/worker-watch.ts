import type { Logger } from 'pino';
import type { Orm } from '../db/orm';
import { liveWorkers } from '../db/worker-heartbeats-store';
import { workersLive, workerQueueSeconds } from '../metrics/registry';

// The API process's view of the workers of its task queue, from their heartbeat rows
// (./worker-heartbeat.ts), read in the background every half beat so a placement never waits for
// it: how many beat within WORKER_HEARTBEAT_STALE_MS, and the longest workflow-task
// schedule-to-start they reported. A read that fails leaves the view unknown (placements are
// admitted as before: the database being out of reach is answered by the placement itself).

export interface WorkersView {
  /** False until a read succeeded, and after one failed. */
  known: boolean;
  live: number;
  scheduleToStartMs: number | null;
}

export class WorkerWatch {
  private view: WorkersView = { known: false, live: 0, scheduleToStartMs: null };
  private timer?: NodeJS.Timeout;
  private reading?: Promise<void>;
  private after?: Promise<void>;
  private failing = false;

  constructor(
    private readonly opts: { orm: Orm; taskQueue: string; staleMs: number; everyMs: number; logger: Logger },
  ) {}

  /** Starts reading; resolves once the first read is done. */
  async start(): Promise<void> {
    this.timer = setInterval(() => void this.refresh(), this.opts.everyMs);
    this.timer.unref();
    await this.refresh();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.reading;
  }

  get current(): WorkersView {
    return this.view;
  }

  /**
   * Reads the rows (also what the timer does); resolves when the view is updated by a read that
   * began after this call. One under way may have begun before a row its caller waits for was
   * written, so such a call waits for the next, shared by every call that came meanwhile.
   */
  refresh(): Promise<void> {
    if (this.reading) {
      this.after ??= this.reading.then(() => {
        this.after = undefined;
        return this.refresh();
      });
      return this.after;
    }
    this.reading = this.read().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async read(): Promise<void> {
    try {
      const found = await liveWorkers(this.opts.orm.em.fork(), this.opts.taskQueue, this.opts.staleMs);
      this.view = { known: true, ...found };
      workersLive.set(found.live);
      workerQueueSeconds.set((found.scheduleToStartMs ?? 0) / 1000);
      this.failing = false;
    } catch (err) {
      this.view = { known: false, live: 0, scheduleToStartMs: null };
      // Postgres out of reach: the requests' own outage lines say so (src/http/outage-log.ts).
      if (!this.failing)
        this.opts.logger.debug(
          { err: { message: (err as Error).message } },
          'worker heartbeats not readable; placements admitted without them',
        );
      this.failing = true;
    }
  }
}
