import type { Logger } from 'pino';

// What a worker process makes sure of in Temporal at start (the reconciler's schedule, the chain
// scanners): done once now, and if Temporal refuses, again every `retryMs` in the background, so
// a Temporal that is down delays it instead of failing the start.

/** Runs `attempt` until it succeeds, logging each failure as `failure`; returns what stops retrying. */
export async function keepTrying(opts: {
  attempt: () => Promise<void>;
  failure: string;
  context: object;
  logger: Logger;
  retryMs?: number;
}): Promise<() => void> {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const run = async (): Promise<void> => {
    try {
      await opts.attempt();
    } catch (err) {
      if (stopped) return;
      opts.logger.error({ err, ...opts.context }, opts.failure);
      timer = setTimeout(() => void run(), opts.retryMs ?? 30_000);
      timer.unref();
    }
  };
  await run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
