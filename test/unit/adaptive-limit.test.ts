import { loadConfig } from '../../src/config';
import { AdaptiveLimit } from '../../src/services/adaptive-limit';
import { admissionSettingsOf } from '../../src/services/admission';
import { workflowTaskWaits } from '../../src/services/worker-heartbeat';

// Issue 39: the admission limit is AIMD on placement latency, decided once per window of the
// latency target, and only while the limit is in use; the workers' reported queue makes it back
// off. The clock is the test's.
const TARGET = 1000;
const make = (initial = 20, queueAllowance = 0) =>
  new AdaptiveLimit({ initial, min: 4, max: 100, targetMs: TARGET, queueAllowance }, 0);

/** One window starting at `at`: `inFlight` placements admitted, each answered after `latency` ms. */
function windowOf(limit: AdaptiveLimit, at: number, inFlight: number, latency: number) {
  for (let i = 1; i <= inFlight; i++) limit.started(i, at + 1);
  for (let i = 0; i < inFlight; i++) limit.answered(latency, at + 2);
}

test.each([
  ['in use and in time: grows by one', 15, 200, 21],
  ['in use and late (p90 twice the target): shrinks by the overshoot, at most 30%', 15, 2000, 14],
  ['in use and a little late: shrinks by a tenth at least', 15, 1050, 18],
  ['not in use (half the limit or less): unchanged however late', 10, 5000, 20],
])('%s', (_name, inFlight, latency, expected) => {
  const limit = make();
  windowOf(limit, 0, inFlight, latency);
  limit.started(1, TARGET + 1); // the next window's first event closes this one
  expect(limit.limit).toBe(expected);
});

test('one late placement in ten does not cut the limit; unanswered ones count as late', () => {
  const limit = make();
  for (let i = 1; i <= 15; i++) limit.started(i, 1);
  for (let i = 0; i < 14; i++) limit.answered(100, 2);
  limit.answered(9000, 3);
  limit.started(1, TARGET + 1);
  expect(limit.limit).toBe(21);

  for (let i = 1; i <= 15; i++) limit.started(i, TARGET + 2);
  for (let i = 0; i < 12; i++) limit.answered(100, TARGET + 3);
  for (let i = 0; i < 3; i++) limit.unanswered(TARGET + 3);
  limit.started(1, 2 * TARGET + 3);
  expect(limit.limit).toBe(14);
});

test('congested workers shrink an in-use limit by a tenth even when placements are fast, and never below the minimum', () => {
  const limit = make(5);
  windowOf(limit, 0, 5, 10);
  limit.congestion(3);
  limit.started(1, TARGET + 1);
  expect(limit.limit).toBe(4);
  windowOf(limit, TARGET + 2, 4, 10);
  limit.congestion(TARGET + 3);
  limit.started(1, 2 * TARGET + 3);
  expect(limit.limit).toBe(4);
});

test('the level shown under load: what was served in time and one more, cut when late, kept through quiet spells', () => {
  const limit = make(100);
  expect(limit.shownLimit).toBe(100); // nothing measured yet: the limit
  windowOf(limit, 0, 30, 200);
  windowOf(limit, TARGET + 1, 20, 200); // below what was shown: kept
  limit.started(1, 2 * TARGET + 2);
  expect([limit.limit, limit.shownLimit]).toEqual([100, 31]);

  windowOf(limit, 2 * TARGET + 3, 31, 2000); // reached and late: cut by the overshoot, at most 30%
  limit.started(1, 3 * TARGET + 4);
  expect([limit.limit, limit.shownLimit]).toEqual([100, 21]);

  // Quiet windows, and light ones (at most half of it in flight), leave it where it is.
  limit.answered(100, 3 * TARGET + 5);
  limit.started(1, 4 * TARGET + 5);
  limit.started(1, 60 * TARGET);
  expect([limit.limit, limit.shownLimit]).toEqual([100, 21]);
});

test('pressed against the level shown (an account refused for room), an in-time window grows it by one though fewer were in flight; late, it is cut', () => {
  const limit = make(100);
  windowOf(limit, 0, 12, 200);
  limit.started(1, TARGET + 1);
  expect(limit.shownLimit).toBe(13);

  // Accounts leave each other room: 10 in flight of 13, and one refused for want of more.
  windowOf(limit, TARGET + 2, 10, 200);
  limit.refused(TARGET + 3);
  limit.started(1, 2 * TARGET + 3);
  expect(limit.shownLimit).toBe(14);

  // Without a refusal, the same window leaves it where it is.
  windowOf(limit, 2 * TARGET + 4, 10, 200);
  limit.started(1, 3 * TARGET + 5);
  expect(limit.shownLimit).toBe(14);

  // Pressed and late: cut by the overshoot.
  windowOf(limit, 3 * TARGET + 6, 10, 2000);
  limit.refused(3 * TARGET + 7);
  limit.started(1, 4 * TARGET + 7);
  expect(limit.shownLimit).toBe(9);

  // Pressed at the floor (a light load showed 3): it grows from the level lent, not from 3.
  const light = make(100);
  windowOf(light, 0, 3, 50);
  light.started(1, TARGET + 1);
  windowOf(light, TARGET + 2, 3, 50);
  light.refused(TARGET + 3);
  light.started(1, 2 * TARGET + 3);
  expect(light.shownLimit).toBe(9);
});

test('a standing overload (over a fifth of those asking refused): the level answers to half the target, grows only well within it, holds between', () => {
  const limit = make(100);
  windowOf(limit, 0, 20, 200);
  limit.started(1, TARGET + 1);
  expect(limit.shownLimit).toBe(21);
  /** A window of 15 in flight answered after `latency`, and 10 refused. */
  const overloaded = (at: number, latency: number) => {
    windowOf(limit, at, 15, latency);
    for (let i = 0; i < 10; i++) limit.refused(at + 3);
  };

  // In time for the target, but over half of it: cut by the overshoot (a tenth at least).
  overloaded(TARGET + 2, 520);
  limit.started(1, 2 * TARGET + 3);
  expect(limit.shownLimit).toBe(18);
  // Within half the target, not well within it: held.
  overloaded(2 * TARGET + 4, 450);
  limit.started(1, 3 * TARGET + 5);
  expect(limit.shownLimit).toBe(18);
  // Well within it: one more than the level lent.
  overloaded(3 * TARGET + 6, 300);
  limit.started(1, 4 * TARGET + 7);
  expect(limit.shownLimit).toBe(19);
  // The same 450 ms with one refused: no standing overload, in time, it grows as pressed.
  windowOf(limit, 4 * TARGET + 8, 15, 450);
  limit.refused(4 * TARGET + 9);
  limit.started(1, 5 * TARGET + 10);
  expect(limit.shownLimit).toBe(20);
});

test('latency first: past the knee the level shown stops growing; in time, but queued behind what runs, it comes down by one', () => {
  const limit = make(100, 3);
  windowOf(limit, 0, 20, 20); // no queue: 20 ms is what a placement takes
  limit.started(1, TARGET + 1);
  expect(limit.shownLimit).toBe(21);

  // 21 in flight, each ten times that: in time, but 19 of them waited (at most 6 × log10(21) may).
  windowOf(limit, TARGET + 2, 21, 200);
  limit.started(1, 2 * TARGET + 3);
  expect([limit.limit, limit.shownLimit]).toEqual([100, 20]);

  // A small queue (20 × (1 − 20/25) = 4, between 3 and 6 × log10(20)): held, neither grown nor cut.
  windowOf(limit, 2 * TARGET + 4, 20, 25);
  limit.started(1, 3 * TARGET + 5);
  expect(limit.shownLimit).toBe(20);

  // Queued windows bring it down to the floor, no further.
  for (let w = 3; w < 40; w++) {
    windowOf(limit, w * TARGET + 6, 20, 400);
    limit.started(1, (w + 1) * TARGET + 6);
  }
  expect(limit.shownLimit).toBe(8);
});

test('the level grows on being in time alone without an allowance, or without a window of ten answers to say what a placement takes', () => {
  const throughputFirst = make(100);
  windowOf(throughputFirst, 0, 20, 20);
  throughputFirst.started(1, TARGET + 1);
  windowOf(throughputFirst, TARGET + 2, 21, 400);
  throughputFirst.started(1, 2 * TARGET + 3);
  expect(throughputFirst.shownLimit).toBe(22);

  const unmeasured = make(100, 3);
  windowOf(unmeasured, 0, 9, 20);
  unmeasured.started(1, TARGET + 1);
  windowOf(unmeasured, TARGET + 2, 9, 400);
  unmeasured.started(1, 2 * TARGET + 3);
  expect(unmeasured.shownLimit).toBe(10);
});

test('ADMISSION_QUEUE_ALLOWANCE: 0 unless set, a number of placements, never negative', () => {
  expect(admissionSettingsOf(loadConfig({})).queueAllowance).toBe(0);
  expect(admissionSettingsOf(loadConfig({ ADMISSION_QUEUE_ALLOWANCE: '3' })).queueAllowance).toBe(3);
  expect(() => loadConfig({ ADMISSION_QUEUE_ALLOWANCE: '-1' })).toThrow(/ADMISSION_QUEUE_ALLOWANCE/);
  expect(() => loadConfig({ ADMISSION_QUEUE_ALLOWANCE: 'many' })).toThrow(/ADMISSION_QUEUE_ALLOWANCE/);
});

test('a light load shows little: lending is never held below 8, nor above the limit', () => {
  const light = make(100);
  windowOf(light, 0, 3, 50);
  light.started(1, TARGET + 1);
  expect(light.shownLimit).toBe(8);

  const small = make(10);
  windowOf(small, 0, 10, 50);
  small.started(1, TARGET + 1);
  expect([small.limit, small.shownLimit]).toEqual([11, 11]);
});

test("the worker's schedule-to-start comes from the SDK core's histogram, every task queue of the process summed", () => {
  const text = [
    '# HELP temporal_workflow_task_schedule_to_start_latency_seconds Histogram',
    'temporal_workflow_task_schedule_to_start_latency_seconds_bucket{task_queue="q",le="0.1"} 3',
    'temporal_workflow_task_schedule_to_start_latency_seconds_sum{namespace="default",task_queue="q"} 1.5',
    'temporal_workflow_task_schedule_to_start_latency_seconds_count{namespace="default",task_queue="q"} 10',
    'temporal_workflow_task_schedule_to_start_latency_seconds_sum{namespace="default",task_queue="host:sticky"} 0.5',
    'temporal_workflow_task_schedule_to_start_latency_seconds_count{namespace="default",task_queue="host:sticky"} 5',
    'temporal_activity_schedule_to_start_latency_seconds_sum{task_queue="q"} 99',
  ].join('\n');
  expect(workflowTaskWaits(text)).toEqual({ sumSeconds: 2, count: 15 });
});
