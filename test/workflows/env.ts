import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { DEV_SECRETS } from '../../src/config';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { testWorkflowBundle } from '../helpers/workflow-bundle';
import { eventually } from '../helpers/eventually';
import { decodeHistory } from '../helpers/history';

// Workflow-level tests: the real workflow code on the test run's Temporal dev server, with the
// activities stubbed (jest.fn). No time skipping: its test server is a download this machine
// cannot make, so durations come from the workflows' inputs and tests use seconds.
//
// One worker per test file serves every test, so tests may run concurrently (`test.concurrent`)
// without paying for a worker (a V8 context for the bundle) each. A test names its own "task
// queue" as a key; the client sends every workflow it starts to the shared worker and remembers
// whose it is, and the worker's one activity routes each call to the stubs of the test that
// started the workflow (a continued-as-new run keeps its workflow id, so it keeps its stubs).

type Activities = Record<string, (...args: any[]) => unknown>;

export interface WorkflowEnv {
  client: Client;
  /** A fresh key for one test's workflows: pass it as their task queue and to `withWorker`. */
  taskQueue(): string;
  /** Runs `fn` while these (stubbed) activities serve the workflows started with `taskQueue`. */
  withWorker<T>(taskQueue: string, activities: Activities, fn: () => Promise<T>): Promise<T>;
  /** Serves a workflow the test does not start itself (a child) with the stubs of `taskQueue`. */
  routeChild(workflowId: string, taskQueue: string): void;
  /** Replays a run's history on the bundle the worker runs; a nondeterminism error throws. */
  replay(history: temporal.api.history.v1.IHistory, workflowId: string): Promise<void>;
  close(): Promise<void>;
}

let runtimeInstalled = false;
/** Bundled once per test file, however many servers the file's tests use. */
let bundled: Promise<WorkflowBundleOption> | undefined;

/** The service's data converter with this test run's key, as every client and worker uses it. */
const converter = () =>
  dataConverter(parseKeyRing(process.env.TEMPORAL_PAYLOAD_KEYS ?? DEV_SECRETS.TEMPORAL_PAYLOAD_KEYS));

/** On the test run's dev server, or on `address` (a server a test started for itself). */
export async function workflowEnv(address = process.env.TEST_TEMPORAL_ADDRESS): Promise<WorkflowEnv> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  if (!address) throw new Error('TEST_TEMPORAL_ADDRESS is not set: run the tests through jest (test/global-setup.mjs)');
  const sharedQueue = `wf-${randomBytes(5).toString('hex')}`;
  const keyOf = new Map<string, string>(); // workflow id → the test's key
  const stubsOf = new Map<string, Activities>(); // the test's key → its stubs

  const route = (workflowId: string, key: string): string => {
    keyOf.set(workflowId, key);
    return sharedQueue;
  };
  const routing: WorkflowClientInterceptor = {
    startWithDetails: (input, next) =>
      next({
        ...input,
        options: { ...input.options, taskQueue: route(input.options.workflowId, input.options.taskQueue) },
      }),
    signalWithStart: (input, next) =>
      next({
        ...input,
        options: { ...input.options, taskQueue: route(input.options.workflowId, input.options.taskQueue) },
      }),
    startUpdateWithStart: (input, next) => {
      const options = input.workflowStartOptions;
      return next({
        ...input,
        workflowStartOptions: { ...options, taskQueue: route(options.workflowId, options.taskQueue) },
      });
    },
  };
  /** The worker's only activity: the stub of that name of the test whose workflow calls it. */
  const stubbed = async (...args: unknown[]) => {
    const { activityType, workflowExecution } = Context.current().info;
    const workflowId = workflowExecution?.workflowId ?? '';
    const key = keyOf.get(workflowId);
    const stub = key === undefined ? undefined : stubsOf.get(key)?.[activityType];
    if (!stub) throw ApplicationFailure.nonRetryable(`no stub for ${activityType} of ${workflowId}`, 'NoStub');
    return stub(...args);
  };

  const [nativeConnection, connection, bundle] = await Promise.all([
    NativeConnection.connect({ address }),
    Connection.connect({ address }),
    (bundled ??= testWorkflowBundle()),
  ]);
  const client = new Client({ connection, dataConverter: converter(), interceptors: { workflow: [routing] } });
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue: sharedQueue,
    workflowBundle: bundle,
    activities: { default: stubbed },
    dataConverter: converter(),
  });
  const running = worker.run();
  return {
    client,
    taskQueue: () => `wf-${randomBytes(5).toString('hex')}`,
    async withWorker(taskQueue, activities, fn) {
      stubsOf.set(taskQueue, activities);
      return fn();
    },
    routeChild(workflowId, taskQueue) {
      keyOf.set(workflowId, taskQueue);
    },
    replay: (history, workflowId) =>
      Worker.runReplayHistory(
        { workflowBundle: bundle, dataConverter: converter(), replayName: workflowId },
        history,
        workflowId,
      ),
    async close() {
      // Nothing a test left waiting (a payment window, a support wait) outlives its file.
      await Promise.all(
        [...keyOf.keys()].map((id) =>
          client.workflow
            .getHandle(id)
            .terminate('test file done')
            .catch(() => undefined),
        ),
      );
      worker.shutdown();
      await running;
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** A fresh id for a workflow of this test. */
export const uniqueId = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** Polls `check` every 50 ms until it holds (a check that throws counts as "not yet"). */
export function until(check: () => boolean | Promise<boolean>, what = 'condition', timeoutMs = 15_000): Promise<true> {
  return eventually(async () => (await check()) || undefined, timeoutMs, 50, what);
}

/** The durable timers a workflow started, in ms, in the order it started them. */
export async function timersOf(handle: {
  fetchHistory: () => Promise<temporal.api.history.v1.IHistory>;
}): Promise<number[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? [])
    .filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_STARTED)
    .map((e) => {
      const d = e.timerStartedEventAttributes!.startToFireTimeout!;
      return Number(d.seconds ?? 0) * 1000 + Math.round(Number(d.nanos ?? 0) / 1e6);
    });
}

/**
 * With CAPTURE_HISTORIES_DIR set (test/replay/capture-rare.ts sets it), a run's history is kept
 * there, its payloads decoded, for the replay fixtures: the rare branches only these tests provoke
 * on purpose (each under its patch). Without it, nothing.
 */
export async function keepHistory(
  workflowType: string,
  workflowId: string,
  history: temporal.api.history.v1.IHistory,
): Promise<void> {
  const dir = process.env.CAPTURE_HISTORIES_DIR;
  if (!dir) return;
  const History = temporal.api.history.v1.History;
  // A copy: the caller may still replay what it fetched.
  const copy = History.decode(History.encode(History.fromObject(history)).finish());
  const decoded = await decodeHistory(copy, process.env.TEMPORAL_PAYLOAD_KEYS ?? DEV_SECRETS.TEMPORAL_PAYLOAD_KEYS);
  const historyProtobufBase64 = Buffer.from(History.encode(decoded).finish()).toString('base64');
  writeFileSync(join(dir, `${workflowId}.json`), JSON.stringify({ workflowId, workflowType, historyProtobufBase64 }));
}
