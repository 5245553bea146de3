import {
  NativeConnection,
  Worker,
  bundleWorkflowCode,
  type WorkerInterceptors,
  type WorkerOptions,
  type WorkflowBundle,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import { safeActivityFailures } from './safe-failures';
import { dataConverter, failureConverterPath, parseKeyRing } from './codec';
import { unencryptedPayloadsRefused } from '../metrics/registry';
import type { TemporalConnectionOptions } from './connection';

export const workflowsPath = require.resolve('../../workflows');

/**
 * Workflow task polling (WORKFLOW_TASK_POLLERS, WORKFLOW_NONSTICKY_POLL_RATIO). With a fixed
 * number of pollers the SDK core gives `floor(pollers × ratio)` (at least 1) to the normal queue
 * and the rest (at least 1) to the sticky queue. Every order, top-up and delivery starts a new
 * workflow whose first task comes on the normal queue; the later tasks of workflows that wait
 * (intent orders, procurement, redemptions, deliveries) come on the sticky one. The default, 20 at
 * 0.5, keeps 10 on each: with 10 and 1, a mixed load left three of four tasks waiting over 1 s on
 * the one sticky poller, and deliveries and redemptions finished late (docs/benchmarks.md).
 * `autoscaling` lets the server's poll answers decide (server 1.28 and later). WORKFLOW_THREADS
 * sets the threads that run workflow code.
 */
export function workflowPolling(
  c: Pick<Config, 'WORKFLOW_TASK_POLLERS' | 'WORKFLOW_NONSTICKY_POLL_RATIO' | 'WORKFLOW_THREADS'>,
): Pick<WorkerOptions, 'workflowTaskPollerBehavior' | 'nonStickyToStickyPollRatio' | 'workflowThreadPoolSize'> {
  return {
    workflowThreadPoolSize: c.WORKFLOW_THREADS,
    workflowTaskPollerBehavior:
      c.WORKFLOW_TASK_POLLERS === 'autoscaling'
        ? { type: 'autoscaling' }
        : { type: 'simple-maximum', maximum: c.WORKFLOW_TASK_POLLERS },
    nonStickyToStickyPollRatio: c.WORKFLOW_NONSTICKY_POLL_RATIO,
  };
}

/** What a worker runs: the activity functions by name (the composition root builds them). */
export type ActivityMap = Record<string, (...args: never[]) => unknown>;

export const workflowInterceptorsPath = require.resolve('../../workflows/interceptors');

/**
 * The worker's workflow bundle. Its modules are preloaded into the shared V8 context: without that
 * the SDK evaluates every module a workflow imports once per new run (each run has its own module
 * cache), which cost an order's first task about 7 ms on the production server. Shared
 * modules must hold no state of a run; the lint rule for workflow code (eslint.config.mjs) refuses
 * module-level let, var and collections in the folders they come from.
 */
export async function bundleWorkflows(): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [workflowInterceptorsPath],
    failureConverterPath,
    preloadModules: [workflowsPath, workflowInterceptorsPath],
    logger: quietBundlerLogger,
  });
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

/** A worker on its own connection, made with temporalConnectionOptions' options (TLS, API key) outside tests. */
export async function createWorker(
  opts: TemporalConnectionOptions & {
    namespace: string;
    taskQueue: string;
    config: Config;
    activities: ActivityMap;
    workflowBundle?: WorkflowBundleOption;
    /** Defaults to the safe-failure activity interceptor; tests may replace it. */
    interceptors?: WorkerInterceptors;
    /** Defaults to the service's (encrypting codec, failures as encoded payloads); tests may replace it. */
    dataConverter?: DataConverter;
  },
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: opts.address, tls: opts.tls, apiKey: opts.apiKey });
  try {
    const worker = await Worker.create({
      connection,
      namespace: opts.namespace,
      taskQueue: opts.taskQueue,
      workflowBundle: opts.workflowBundle ?? (await bundleWorkflows()),
      activities: opts.activities,
      interceptors: opts.interceptors ?? { activity: [safeActivityFailures] },
      dataConverter:
        opts.dataConverter ??
        dataConverter(parseKeyRing(opts.config.TEMPORAL_PAYLOAD_KEYS), {
          refuseUnencrypted: true,
          onRefused: () => unencryptedPayloadsRefused.inc(),
        }),
      ...workflowPolling(opts.config),
      // Let in-flight activities finish on shutdown.
      shutdownGraceTime: '20 seconds',
    });
    return { worker, connection };
  } catch (err) {
    await connection.close().catch(() => undefined);
    throw err;
  }
}
