import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { capacity, delta, keptUp, scheduleToStart, sizing, waits, type Step } from '../../bench/capacity-report';

// bench/capacity's rules (docs/benchmarks.md, *Capacity*): a worker keeps up while no more than 5%
// of its workflow tasks wait over 1 s to start (p95 within Temporal's overload threshold), every
// order is answered and the offered rate is served; its capacity is the last step it kept up with.
// The README's sizing rule and the chart's KEDA target quote the recorded run.
const root = resolve(__dirname, '..', '..');

const scrape = (counts: Record<string, number>, labels = 'namespace="default"') =>
  Object.entries(counts)
    .map(([le, n]) => `temporal_workflow_task_schedule_to_start_latency_bucket{${labels},le="${le}"} ${n}`)
    .join('\n');

test('schedule-to-start histograms are summed over label sets and differenced between scrapes', () => {
  const before = scheduleToStart(scrape({ '0.1': 5, '1': 8, '+Inf': 10 }), 'workflow_task');
  const text = `${scrape({ '0.1': 50, '1': 90, '+Inf': 100 })}\n${scrape({ '0.1': 0, '1': 0, '+Inf': 10 }, 'task_queue="other"')}`;
  const after = scheduleToStart(text, 'workflow_task');
  expect(waits(delta(before, after))).toEqual({ tasks: 100, over: 18, p95UpperBound: Infinity });
  expect(waits(scheduleToStart(scrape({ '0.1': 96, '1': 100, '+Inf': 100 }), 'workflow_task'))).toEqual({
    tasks: 100,
    over: 0,
    p95UpperBound: 0.1,
  });
  // A histogram never observed (no activity task) is not exported: nothing waited.
  expect(waits(scheduleToStart('', 'activity'))).toEqual({ tasks: 0, over: 0, p95UpperBound: 0 });
});

function step(target: number, ok: number, over: number, failed = 0): Step {
  const tasks = { tasks: ok, over, p95UpperBound: 0 };
  return {
    target,
    seconds: 10,
    ok,
    failed,
    latenciesMs: [10],
    workflowTasks: tasks,
    activityTasks: { tasks: 0, over: 0, p95UpperBound: 0 },
    apiCpu: ok / 100,
    workerCpu: ok / 40,
  };
}

test('a worker keeps up while at most 5% of workflow tasks wait over 1 s, every order is answered and the rate is served', () => {
  expect(keptUp(step(10, 100, 5))).toBe(true);
  expect(keptUp(step(10, 100, 6))).toBe(false);
  expect(keptUp(step(10, 100, 0, 1))).toBe(false);
  expect(keptUp(step(10, 94, 0))).toBe(false);
});

test('its capacity is the last step before the first it fell behind at; the sizing rule follows from it', () => {
  const c = capacity([step(10, 100, 0), step(12.5, 125, 1), step(15.6, 156, 40), step(19.5, 195, 0)]);
  expect(c).toEqual({ perWorker: 12.5, perApiCore: 100, perWorkerCore: 40, tasksPerOrder: 1, crossedAt: 15.6 });
  expect(sizing(c, 100)).toEqual({ workers: 8, apis: 2, targetQueueSize: 12 });
  expect(() => capacity([step(10, 100, 50)])).toThrow(/fell behind at the first step/);
});

test("the README's sizing rule and the chart's KEDA target quote the recorded run of docs/benchmarks.md", () => {
  const benchmarks = readFileSync(resolve(root, 'docs', 'benchmarks.md'), 'utf8');
  const results = [...benchmarks.matchAll(/^CAPACITY_RESULT (\{.*\})$/gm)];
  expect(results.length).toBeGreaterThan(0);
  const recorded = JSON.parse(results[results.length - 1][1]);
  const rule = sizing(recorded, 100);
  const readme = readFileSync(resolve(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('**Sizing**'), readme.indexOf('\n\n', readme.indexOf('**Sizing**')));
  expect(section).toContain(`${recorded.perWorker.toFixed(1)} orders/s`);
  expect(section).toContain(`${Math.round(recorded.perApiCore)} orders/s`);
  expect(section).toContain(`targetQueueSize: ${rule.targetQueueSize}`);
  const values = parse(readFileSync(resolve(root, 'deploy', 'helm', 'wholesale', 'values.yaml'), 'utf8'));
  expect(values.worker.autoscaling.targetQueueSize).toBe(rule.targetQueueSize);
});
