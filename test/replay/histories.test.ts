// Replay safety (issue 15, item 5): histories captured from a soak (test/fixtures/histories, see
// test/replay/capture.ts) are replayed against today's workflow bundle. A change to a workflow
// that would break executions already running (a new or reordered command without `patched`)
// makes this fail with a nondeterminism error naming the history.
//
// Regenerate the fixtures (after an intended, patched change): node --import tsx test/replay/capture.ts
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { failureConverterPath } from '../../src/temporal/codec';
import { testWorkflowBundle } from '../helpers/workflow-bundle';
import * as workflows from '../../workflows';
import { jobChecksPatch } from '../../src/contracts/reconcile-contract';
import { awaitInFlightPatch, latePlacementPatch } from '../../workflows/placement';
import { handedOffStatusPatch } from '../../workflows/procurement-handoff';
import { FIXTURE_DIR, patchesOf, SECRET_PATTERNS, WORKFLOW_TYPES } from './capture';

interface Fixture {
  file: string;
  workflowId: string;
  workflowType: string;
  raw: string;
  history: temporal.api.history.v1.History;
}

const fixtures: Fixture[] = readdirSync(FIXTURE_DIR)
  .filter((f) => f.endsWith('.json') && f !== 'index.json')
  .sort()
  .map((file) => {
    const raw = readFileSync(join(FIXTURE_DIR, file), 'utf8');
    const parsed = JSON.parse(raw) as { workflowId: string; workflowType: string; historyProtobufBase64: string };
    const history = temporal.api.history.v1.History.decode(Buffer.from(parsed.historyProtobufBase64, 'base64'));
    return { file, workflowId: parsed.workflowId, workflowType: parsed.workflowType, raw, history };
  });

let bundle: WorkflowBundleOption;

beforeAll(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // another test file of this jest worker installed it
  }
  bundle = await testWorkflowBundle();
}, 120_000);

test('there is a captured history of every workflow type the worker runs', () => {
  expect(Object.keys(workflows).sort()).toEqual([...WORKFLOW_TYPES].sort());
  for (const type of WORKFLOW_TYPES)
    expect([type, fixtures.filter((f) => f.workflowType === type).length]).toEqual([type, expect.any(Number)]);
  expect(new Set(fixtures.map((f) => f.workflowType))).toEqual(new Set(WORKFLOW_TYPES));
  for (const f of fixtures) {
    const started = f.history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
    expect([f.file, started]).toEqual([f.file, f.workflowType]);
    // Payloads are stored decoded: nothing secret-shaped may be in a committed fixture.
    // (the readable parts, and the protobuf's own bytes: payload data is plain UTF-8 in it)
    const { historyProtobufBase64, ...readable } = JSON.parse(f.raw) as { historyProtobufBase64: string };
    const text = `${JSON.stringify(readable)}${Buffer.from(historyProtobufBase64, 'base64').toString('latin1')}`;
    for (const p of SECRET_PATTERNS) expect([f.file, p.test(text)]).toEqual([f.file, false]);
  }
});

test('the fixtures hold histories that took the patches of the common paths, and the code before each', () => {
  const took = (patch: string) => fixtures.filter((f) => patchesOf(f.history).includes(patch)).map((f) => f.file);
  const without = (patch: string, type: string) =>
    fixtures.filter((f) => f.workflowType === type && !patchesOf(f.history).includes(patch)).map((f) => f.file);
  // These are the ones every order, top-up or reconciler run goes through; the rarer branches
  // come from the workflow tests (the next test).
  for (const [patch, type] of [
    [awaitInFlightPatch, 'orderWorkflow'],
    [handedOffStatusPatch, 'orderWorkflow'],
    ['placement-recovery', 'topupWorkflow'],
    [jobChecksPatch, 'reconcileWorkflow'],
  ]) {
    expect([patch, took(patch).length > 0]).toEqual([patch, true]);
    expect([patch, without(patch, type).length > 0]).toEqual([patch, true]);
  }
});

test('the fixtures hold orders started with their status, with and without the in-flight marker', () => {
  // Runs started with OrderStatus take awaitInFlightPatch's path; since it is read from the start
  // they record no marker, and the ones recorded before must still replay.
  const startedWithStatus = fixtures.filter(
    (f) =>
      f.workflowType === 'orderWorkflow' &&
      f.history.events?.[0]?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields?.OrderStatus,
  );
  const marked = startedWithStatus.filter((f) => patchesOf(f.history).includes(awaitInFlightPatch));
  expect(marked.length).toBeGreaterThan(0);
  expect(startedWithStatus.length).toBeGreaterThan(marked.length);
});

test('the fixtures hold a history of each rarer branch, under its patch (test/replay/capture-rare.ts)', () => {
  const took = (patch: string, type: string) =>
    fixtures.filter((f) => f.workflowType === type && patchesOf(f.history).includes(patch)).map((f) => f.file);
  for (const [patch, type] of [
    [latePlacementPatch, 'orderWorkflow'],
    [latePlacementPatch, 'topupWorkflow'],
    ['payment-notice-while-finishing', 'orderWorkflow'],
    ['retry-after-end', 'webhookDeliveryWorkflow'],
    ['operator-queue-outcome', 'redemptionWorkflow'],
  ])
    expect([patch, type, took(patch, type).length > 0]).toEqual([patch, type, true]);
});

test('every captured history replays without a nondeterminism error on the current workflow code', async () => {
  const results: { file: string; error?: string }[] = [];
  const byId = new Map(fixtures.map((f) => [f.workflowId, f.file]));
  // Payloads are stored decoded, so the replay needs the service's failure converter, not its codec.
  const replay = Worker.runReplayHistories(
    { workflowBundle: bundle, dataConverter: { failureConverterPath }, replayName: 'fixtures' },
    fixtures.map((f) => ({ workflowId: f.workflowId, history: f.history })),
  );
  for await (const r of replay)
    results.push({
      file: byId.get(r.workflowId) ?? r.workflowId,
      error: r.error ? `${r.error.name}: ${r.error.message}` : undefined,
    });
  expect(results.filter((r) => r.error)).toEqual([]);
  expect(results).toHaveLength(fixtures.length);
}, 120_000);
