import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestHandler } from 'express';
import onHeaders from 'on-headers';

// The `Server-Timing` response header (W3C Server Timing), for the latency anatomy bench
// (bench/anatomy.ts): how long each step of a request took in this process, so a client can tell
// the API's own work from the engine's. Off unless SERVER_TIMING is set: the step names describe
// the service's insides, which a reseller has no use for.

interface Marks {
  start: number;
  steps: { name: string; ms: number }[];
  /** Wall-clock times (epoch ms) of moments a client lines up with Temporal's event times. */
  at: { name: string; epochMs: number }[];
}

const store = new AsyncLocalStorage<Marks>();

/** Runs `fn` as the step `name` of the current request's timing (or just runs it when timing is off). */
export async function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const marks = store.getStore();
  if (!marks) return fn();
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    marks.steps.push({ name, ms: performance.now() - t0 });
  }
}

/** Notes the wall-clock moment `name` in the current request's timing. */
export function timedAt(name: string): void {
  store.getStore()?.at.push({ name, epochMs: performance.timeOrigin + performance.now() });
}

const header = (m: Marks): string =>
  [
    ...m.steps.map((s) => `${s.name};dur=${s.ms.toFixed(2)}`),
    ...m.at.map((a) => `${a.name};desc="${a.epochMs.toFixed(3)}"`),
    `app;dur=${(performance.now() - m.start).toFixed(2)}`,
  ].join(', ');

export function serverTiming(enabled: boolean): RequestHandler {
  if (!enabled) return (_req, _res, next) => next();
  return (_req, res, next) => {
    const marks: Marks = { start: performance.now(), steps: [], at: [] };
    onHeaders(res, () => res.setHeader('Server-Timing', header(marks)));
    store.run(marks, next);
  };
}
