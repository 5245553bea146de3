// bench/capacity's arithmetic, apart from its stack so a test can hold it to its rules: histogram
// deltas from two Prometheus scrapes, the share of tasks that waited over 1 s, which step is the
// last one a worker kept up with, and the sizing rule that follows.

/** Temporal's threshold for an overloaded worker: schedule-to-start p95 over 1 s. */
export const OVERLOAD_SECONDS = 1;

/** Cumulative bucket counts of one histogram (summed over its label sets), by upper bound. */
export type Buckets = Map<number, number>;

/** `temporal_<kind>_schedule_to_start_latency` (seconds; with or without the `_seconds` suffix) from Prometheus text. */
export function scheduleToStart(text: string, kind: 'workflow_task' | 'activity'): Buckets {
  const buckets: Buckets = new Map();
  const re = new RegExp(
    `^temporal_${kind}_schedule_to_start_latency(?:_seconds)?_bucket\\{[^}]*le="([^"]+)"[^}]*\\} ([0-9.eE+]+)$`,
    'gm',
  );
  for (const m of text.matchAll(re)) {
    const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
    buckets.set(le, (buckets.get(le) ?? 0) + Number(m[2]));
  }
  return buckets;
}

/** What was observed between two scrapes of one histogram. */
export function delta(before: Buckets, after: Buckets): Buckets {
  return new Map([...after].map(([le, n]) => [le, n - (before.get(le) ?? 0)]));
}

export interface Waits {
  /** Tasks that started in the interval. */
  tasks: number;
  /** Of those, how many waited longer than OVERLOAD_SECONDS. */
  over: number;
  /** The p95's bucket: the smallest bound under which 95% of the tasks started. */
  p95UpperBound: number;
}

/** p95 over 1 s is the same as more than 5% of the tasks over 1 s, which needs a bucket bound at 1 s. */
export function waits(buckets: Buckets): Waits {
  const tasks = buckets.get(Infinity) ?? 0;
  // A histogram the worker never observed (no activity task yet) is not exported at all.
  if (buckets.size === 0) return { tasks: 0, over: 0, p95UpperBound: 0 };
  if (!buckets.has(OVERLOAD_SECONDS))
    throw new Error(
      `the histogram has no bucket bound at ${OVERLOAD_SECONDS} s (bounds: ${[...buckets.keys()].join(', ')})`,
    );
  const over = tasks - buckets.get(OVERLOAD_SECONDS)!;
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const p95UpperBound = tasks === 0 ? 0 : (bounds.find((le) => buckets.get(le)! >= 0.95 * tasks) ?? Infinity);
  return { tasks, over, p95UpperBound };
}

export interface Step {
  /** Orders per second offered (open loop). */
  target: number;
  seconds: number;
  ok: number;
  failed: number;
  latenciesMs: number[];
  workflowTasks: Waits;
  activityTasks: Waits;
  /** CPU seconds used in the step by the API process and by the worker process. */
  apiCpu: number;
  workerCpu: number;
}

export const achieved = (s: Step) => s.ok / s.seconds;

/** Whether the worker kept up: every order answered, the offered rate served, workflow tasks' p95 wait within 1 s. */
export function keptUp(s: Step): boolean {
  return s.failed === 0 && achieved(s) >= 0.95 * s.target && s.workflowTasks.over <= 0.05 * s.workflowTasks.tasks;
}

export interface Capacity {
  /** Orders per second of the last step the worker kept up with (one worker process). */
  perWorker: number;
  /** Orders per second one API process serves on one core (its CPU per order, over the steps kept up with). */
  perApiCore: number;
  /** The same for a worker process: its CPU ceiling, beside the measured rate. */
  perWorkerCore: number;
  /** Workflow and activity tasks per order (what KEDA's backlog counts). */
  tasksPerOrder: number;
  /** The step where the worker first fell behind, if the bench got there. */
  crossedAt?: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export function capacity(steps: Step[]): Capacity {
  const kept = steps.filter(keptUp);
  const firstBehind = steps.find((s) => !keptUp(s));
  const upTo = firstBehind ? kept.filter((s) => s.target < firstBehind.target) : kept;
  if (upTo.length === 0) throw new Error('the worker fell behind at the first step: start lower (--start)');
  const last = upTo[upTo.length - 1];
  return {
    perWorker: achieved(last),
    perApiCore: median(upTo.map((s) => s.ok / s.apiCpu)),
    perWorkerCore: median(upTo.map((s) => s.ok / s.workerCpu)),
    tasksPerOrder: median(upTo.map((s) => (s.workflowTasks.tasks + s.activityTasks.tasks) / s.ok)),
    crossedAt: firstBehind?.target,
  };
}

/**
 * The sizing rule: worker replicas for a peak rate, and KEDA's target backlog per replica. A
 * replica clears `perWorker × tasksPerOrder` tasks a second, so a backlog of that many per replica
 * waits about 1 s: above it the tasks wait longer than Temporal's overload threshold.
 */
export function sizing(c: Capacity, peakOrdersPerSecond: number) {
  return {
    workers: Math.max(2, Math.ceil(peakOrdersPerSecond / c.perWorker)),
    apis: Math.max(2, Math.ceil(peakOrdersPerSecond / (0.7 * c.perApiCore))),
    targetQueueSize: Math.max(1, Math.floor(c.perWorker * c.tasksPerOrder * OVERLOAD_SECONDS)),
  };
}

export function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
}

export function stepLine(s: Step): string {
  const l = [...s.latenciesMs].sort((a, b) => a - b);
  const share = (w: Waits) => (w.tasks ? `${((100 * w.over) / w.tasks).toFixed(1)}%` : '-');
  return [
    s.target.toFixed(1).padStart(7),
    achieved(s).toFixed(1).padStart(9),
    String(s.failed).padStart(7),
    pct(l, 50).toFixed(0).padStart(8),
    pct(l, 95).toFixed(0).padStart(8),
    String(s.workflowTasks.tasks).padStart(7),
    share(s.workflowTasks).padStart(8),
    `<=${s.workflowTasks.p95UpperBound}`.padStart(9),
    share(s.activityTasks).padStart(8),
    ((1000 * s.apiCpu) / Math.max(1, s.ok)).toFixed(2).padStart(9),
    ((1000 * s.workerCpu) / Math.max(1, s.ok)).toFixed(2).padStart(9),
    keptUp(s) ? '  kept up' : '  BEHIND',
  ].join(' ');
}

export const STEP_HEADER =
  'offered  served/s  failed  p50 ms  p95 ms  wf tasks  >1 s   p95 s    act >1 s  API ms/o  wkr ms/o';
