import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  operatorDecisionSignal,
  type AttemptOutcome,
  redemptionStateQuery,
  redemptionWorkflowId,
  type RedemptionWorkflowInput,
  type UpstreamState,
} from '../../src/contracts/redemptions-contract';
import { keepHistory, timersOf as timers, uniqueId, until, workflowEnv, type WorkflowEnv } from './env';

// redemptionWorkflow's state table with stubbed activities (spec 3.4 and 8, issue 17):
//   start:     attempt not visible → abandoned; already finished → done; submit fails → failed
//   waiting:   refresh at most once per refreshSeconds; a refresh that fails is asked again;
//              upstream fulfilled → fulfilled; failed → failed; an operator may decide a stuck one
//   manual:    no refreshes, the operator's first decision (fulfill or reject) is the outcome
//   releasing: a failure that holds supplier resources (retry_conflict) is watched until released
//   resume:    a continued-as-new run picks up in its phase
//   cancel:    a cancelled workflow ends cancelled, never as an abandoned or failed attempt
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const REFRESH_SECONDS = 0.5;
type Step = UpstreamState | 'down';
const processing: UpstreamState = { state: 'processing' };
const holding: UpstreamState = { state: 'failed', failureCode: 'fulfillment_failed', holdsResources: true };

/** Activities answering like Postgres and a scripted upstream; each status call is timed. */
function stubs(opts: { manual?: boolean; begun?: 'ready' | 'finished'; upstream?: Step[] } = {}) {
  const script = [...(opts.upstream ?? [])];
  const statusAt: number[] = [];
  const activities = {
    beginRedemptionAttempt: jest.fn(async () => ({ state: opts.begun ?? 'ready', manual: opts.manual ?? false })),
    submitRedemptionUpstream: jest.fn(async () => ({ ref: 'up_1' })),
    redemptionUpstreamStatus: jest.fn(async () => {
      statusAt.push(Date.now());
      const step = script.shift() ?? processing;
      // Non-retryable so the test need not sit out the activity's own retries (refreshSeconds apart).
      if (step === 'down') throw ApplicationFailure.nonRetryable('upstream unreachable', 'UpstreamDown');
      return step;
    }),
    finishRedemptionAttempt: jest.fn(async (_i: { outcome: AttemptOutcome }) => undefined),
    releaseRedemptionResources: jest.fn(async () => undefined),
  };
  return { activities, statusAt };
}

const input = (over: Partial<RedemptionWorkflowInput> = {}): RedemptionWorkflowInput => ({
  redemptionId: uniqueId('rdm'),
  attempt: 1,
  refreshSeconds: REFRESH_SECONDS,
  ...over,
});

function start(taskQueue: string, i: RedemptionWorkflowInput) {
  return env.client.workflow.start('redemptionWorkflow', {
    workflowId: redemptionWorkflowId(i.redemptionId, i.attempt),
    taskQueue,
    args: [i],
  });
}

type Handle = Awaited<ReturnType<typeof start>>;

const phaseIs = (handle: Handle, phase: string) => async () =>
  (await handle.query(redemptionStateQuery)).phase === phase;

test.concurrent(
  'automatic product: submitted, refreshed once per refreshSeconds while processing, fulfilled',
  async () => {
    const tq = env.taskQueue();
    const s = stubs({ upstream: [processing, processing, { state: 'fulfilled' }] });
    const i = input();
    const submittedAt = Date.now();
    await env.withWorker(tq, s.activities, async () => {
      const handle = await start(tq, i);
      expect(await handle.result()).toMatchObject({
        phase: 'done',
        status: 'fulfilled',
        upstreamRef: 'up_1',
        refreshes: 3,
        manual: false,
      });
      // Every refresh waits out a durable timer of refreshSeconds first, and no refresh comes sooner.
      expect(await timers(handle)).toEqual([500, 500, 500]);
    });
    const gaps = s.statusAt.map((t, n) => t - (n === 0 ? submittedAt : s.statusAt[n - 1]));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(REFRESH_SECONDS * 1000 - 50);
    expect(s.activities.submitRedemptionUpstream).toHaveBeenCalledTimes(1);
    expect(s.activities.redemptionUpstreamStatus).toHaveBeenCalledWith(
      expect.objectContaining({ redemptionId: i.redemptionId, attempt: 1, upstreamRef: 'up_1' }),
    );
    expect(s.activities.finishRedemptionAttempt.mock.calls).toEqual([
      [{ redemptionId: i.redemptionId, attempt: 1, outcome: { status: 'fulfilled' } }],
    ]);
    expect(s.activities.releaseRedemptionResources).not.toHaveBeenCalled();
  },
);

test.concurrent('a refresh that fails (the upstream down) is not an outcome: the next refresh asks again', async () => {
  const tq = env.taskQueue();
  const s = stubs({ upstream: ['down', { state: 'fulfilled' }] });
  await env.withWorker(tq, s.activities, async () => {
    expect(await (await start(tq, input())).result()).toMatchObject({ status: 'fulfilled', refreshes: 2 });
  });
  expect(s.activities.finishRedemptionAttempt).toHaveBeenCalledTimes(1);
});

test.concurrent('the upstream fails the redemption without holding resources: failed, nothing to release', async () => {
  const tq = env.taskQueue();
  const failed: UpstreamState = { state: 'failed', failureCode: 'fulfillment_failed', holdsResources: false };
  const s = stubs({ upstream: [failed] });
  await env.withWorker(tq, s.activities, async () => {
    expect(await (await start(tq, input())).result()).toMatchObject({ phase: 'done', status: 'failed' });
  });
  expect(s.activities.finishRedemptionAttempt.mock.calls[0][0]).toMatchObject({
    outcome: { status: 'failed', failureCode: 'fulfillment_failed', holdsResources: false },
  });
  expect(s.activities.releaseRedemptionResources).not.toHaveBeenCalled();
});

test.concurrent(
  'a failure that holds supplier resources stays releasing (retry_conflict) until the upstream lets go, then releases once',
  async () => {
    const tq = env.taskQueue();
    // The outcome, then two refreshes still holding, then released.
    const s = stubs({ upstream: [holding, holding, holding, processing] });
    await env.withWorker(tq, s.activities, async () => {
      const handle = await start(tq, input());
      await until(phaseIs(handle, 'releasing'), 'releasing');
      // The attempt is failed already (the reseller sees it), yet its resources are not released.
      expect(await handle.query(redemptionStateQuery)).toMatchObject({ status: 'failed', phase: 'releasing' });
      expect(s.activities.finishRedemptionAttempt).toHaveBeenCalledTimes(1);
      expect(s.activities.releaseRedemptionResources).not.toHaveBeenCalled();
      expect(await handle.result()).toMatchObject({ phase: 'done', status: 'failed', refreshes: 4 });
    });
    expect(s.activities.finishRedemptionAttempt.mock.calls[0][0]).toMatchObject({
      outcome: { status: 'failed', holdsResources: true },
    });
    expect(s.activities.releaseRedemptionResources).toHaveBeenCalledTimes(1);
  },
);

test.concurrent.each([
  ['fulfill', { status: 'fulfilled', deliverable: 'Fulfilled by an operator: checked by phone' }],
  ['reject', { status: 'failed', failureCode: 'rejected_by_operator', holdsResources: false }],
] as const)(
  "manual product: no refreshes; the operator's first decision (%s) is the outcome",
  async (decision, outcome) => {
    const tq = env.taskQueue();
    const s = stubs({ manual: true });
    // The outcome is recorded only once the test has sent its second decision, so the run is still open for it.
    let open!: () => void;
    const secondSent = new Promise<void>((r) => (open = r));
    const finishRedemptionAttempt = jest.fn(async (_i: { outcome: AttemptOutcome }) => secondSent);
    await env.withWorker(tq, { ...s.activities, finishRedemptionAttempt }, async () => {
      const handle = await start(tq, input());
      await until(phaseIs(handle, 'waiting'), 'waiting');
      await handle.signal(operatorDecisionSignal, { decision, reason: 'checked by phone', actor: 'ops@example.com' });
      // A second decision (another operator, a double click) changes nothing.
      await handle.signal(operatorDecisionSignal, {
        decision: decision === 'fulfill' ? 'reject' : 'fulfill',
        reason: 'late',
        actor: 'other@example.com',
      });
      open();
      expect(await handle.result()).toMatchObject({
        phase: 'done',
        status: outcome.status,
        manual: true,
        refreshes: 0,
        decision: { decision },
      });
    });
    expect(s.activities.redemptionUpstreamStatus).not.toHaveBeenCalled();
    expect(finishRedemptionAttempt.mock.calls).toEqual([[expect.objectContaining({ outcome })]]);
  },
);

test.concurrent('an operator may decide an automatic redemption the upstream keeps processing', async () => {
  const tq = env.taskQueue();
  const s = stubs();
  await env.withWorker(tq, s.activities, async () => {
    const handle = await start(tq, input());
    await until(() => s.activities.redemptionUpstreamStatus.mock.calls.length >= 1, 'a refresh');
    await handle.signal(operatorDecisionSignal, { decision: 'fulfill', reason: '', actor: 'ops@example.com' });
    expect(await handle.result()).toMatchObject({ status: 'fulfilled', decision: { decision: 'fulfill' } });
  });
  expect(s.activities.finishRedemptionAttempt.mock.calls[0][0]).toMatchObject({
    outcome: { status: 'fulfilled', deliverable: 'Fulfilled by an operator.' },
  });
});

test.concurrent.each([
  ['fulfill', {}, { status: 'fulfilled' }],
  [
    'reject',
    { failureCode: 'fulfillment_failed', holdsResources: true },
    { status: 'failed', failureCode: 'fulfillment_failed', holdsResources: true },
  ],
] as const)(
  "the operator queue's decision (%s): the deliverable stays in Postgres, a failure keeps its own code, under its patch",
  async (decision, queue, outcome) => {
    const tq = env.taskQueue();
    const s = stubs({
      manual: true,
      upstream: [processing, processing, processing, processing, processing, processing],
    });
    await env.withWorker(tq, s.activities, async () => {
      const handle = await start(tq, input());
      await until(phaseIs(handle, 'waiting'), 'waiting');
      await handle.signal(operatorDecisionSignal, { decision, reason: '', actor: 'operators', queue });
      expect(await handle.result()).toMatchObject({ status: outcome.status, decision: { decision } });
      await keepHistory('redemptionWorkflow', handle.workflowId, await handle.fetchHistory());
    });
    // Exactly the queue's outcome: no operator's note as the deliverable, the failure as the queue named it.
    expect(s.activities.finishRedemptionAttempt.mock.calls[0][0].outcome).toEqual(outcome);
  },
);

test.concurrent('an attempt already finished (a second start for it) ends at once without submitting', async () => {
  const tq = env.taskQueue();
  const s = stubs({ begun: 'finished' });
  await env.withWorker(tq, s.activities, async () => {
    expect(await (await start(tq, input())).result()).toMatchObject({ phase: 'done', status: 'pending' });
  });
  expect(s.activities.submitRedemptionUpstream).not.toHaveBeenCalled();
  expect(s.activities.finishRedemptionAttempt).not.toHaveBeenCalled();
});

test.concurrent(
  'an attempt whose submission never committed is abandoned: nothing submitted, nothing finished',
  async () => {
    const tq = env.taskQueue();
    const s = stubs();
    const beginRedemptionAttempt = jest.fn(async () => {
      throw ApplicationFailure.nonRetryable('attempt is not visible', 'AttemptNotVisible');
    });
    await env.withWorker(tq, { ...s.activities, beginRedemptionAttempt }, async () => {
      expect(await (await start(tq, input())).result()).toMatchObject({ phase: 'abandoned', status: 'pending' });
    });
    expect(s.activities.submitRedemptionUpstream).not.toHaveBeenCalled();
    expect(s.activities.finishRedemptionAttempt).not.toHaveBeenCalled();
  },
);

test.concurrent(
  'a submission the upstream never takes fails the attempt (fulfillment_failed), holding nothing',
  async () => {
    const tq = env.taskQueue();
    const s = stubs();
    const submitRedemptionUpstream = jest.fn(async () => {
      throw ApplicationFailure.nonRetryable('upstream refused the submission', 'UpstreamRefused');
    });
    await env.withWorker(tq, { ...s.activities, submitRedemptionUpstream }, async () => {
      expect(await (await start(tq, input())).result()).toMatchObject({
        phase: 'done',
        status: 'failed',
        upstreamRef: null,
      });
    });
    expect(s.activities.finishRedemptionAttempt.mock.calls[0][0]).toMatchObject({
      outcome: { status: 'failed', failureCode: 'fulfillment_failed', holdsResources: false },
    });
    expect(s.activities.redemptionUpstreamStatus).not.toHaveBeenCalled();
  },
);

test.concurrent.each([
  [
    'releasing',
    { phase: 'releasing', upstreamRef: 'up_9', manual: false, decision: null },
    { status: 'failed', refreshes: 1 },
    'releaseRedemptionResources',
  ],
  [
    'waiting, decided',
    {
      phase: 'waiting',
      upstreamRef: 'up_9',
      manual: true,
      decision: { decision: 'reject', reason: 'x', actor: 'ops' },
    },
    { status: 'failed', refreshes: 0 },
    'finishRedemptionAttempt',
  ],
] as const)(
  'a continued-as-new run resumes in its phase (%s) without beginning or submitting again',
  async (_name, resume, result, called) => {
    const tq = env.taskQueue();
    const s = stubs();
    await env.withWorker(tq, s.activities, async () => {
      expect(await (await start(tq, input({ resume }))).result()).toMatchObject({
        phase: 'done',
        upstreamRef: 'up_9',
        ...result,
      });
    });
    expect(s.activities.beginRedemptionAttempt).not.toHaveBeenCalled();
    expect(s.activities.submitRedemptionUpstream).not.toHaveBeenCalled();
    expect(s.activities[called]).toHaveBeenCalledTimes(1);
  },
);

test.concurrent.each([
  ['while the attempt is being begun', 'beginRedemptionAttempt'],
  ['while the upstream is being asked', 'redemptionUpstreamStatus'],
] as const)('a cancelled workflow ends cancelled %s: the catch rethrows the cancellation', async (_name, blocked) => {
  const tq = env.taskQueue();
  const s = stubs();
  let unblock!: () => void;
  const held = new Promise<void>((r) => (unblock = r));
  const blocking = jest.fn(async (...args: unknown[]) => {
    await held;
    return (s.activities[blocked] as (...a: unknown[]) => Promise<unknown>)(...args);
  });
  await env.withWorker(tq, { ...s.activities, [blocked]: blocking }, async () => {
    const handle = await start(tq, input());
    await until(() => blocking.mock.calls.length > 0, blocked);
    await handle.cancel();
    const err = await handle.result().catch((e) => e);
    unblock();
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.cause).toBeInstanceOf(CancelledFailure);
  });
  expect(s.activities.finishRedemptionAttempt).not.toHaveBeenCalled();
});
