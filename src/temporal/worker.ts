import { NativeConnection, Worker, bundleWorkflowCode, type WorkerInterceptors, type WorkerOptions, type WorkflowBundle } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import type { Providers } from '../providers';
import { createOrderActivities } from '../../activities/orders-activities';
import { createPaymentActivities } from '../../activities/payments-activities';
import { createRedemptionActivities } from '../../activities/redemptions-activities';
import { createWebhookActivities } from '../../activities/webhooks-activities';
import { createProcurementActivities } from '../../activities/procurement-activities';
import { createEvmCheckoutActivities } from '../../activities/evm-checkouts-activities';
import { createReconcileActivities } from '../../activities/reconcile-activities';
import { safeActivityFailures } from './safe-failures';
import { dataConverter, failureConverterPath, parseKeyRing } from './codec';
import type { TemporalHandle } from './client';

export const workflowsPath = require.resolve('../../workflows');

/**
 * Workflow task polling (WORKFLOW_TASK_POLLERS, WORKFLOW_NONSTICKY_POLL_RATIO). With a fixed
 * number of pollers the SDK core gives `floor(pollers × ratio)` (at least 1) to the normal queue
 * and the rest (at least 1) to the sticky queue, so ratio 1 means every poller but one waits on
 * the normal queue. Every order, top-up and delivery starts a new workflow whose first task comes
 * on the normal queue; the tasks of workflows that wait (intent orders, procurement, redemptions,
 * deliveries) come later on the sticky one. `autoscaling` lets the server's poll answers decide
 * (server 1.28 and later). The measured effect of each is in docs/benchmarks.md.
 */
export function workflowPolling(c: Pick<Config, 'WORKFLOW_TASK_POLLERS' | 'WORKFLOW_NONSTICKY_POLL_RATIO'>): Pick<WorkerOptions, 'workflowTaskPollerBehavior' | 'nonStickyToStickyPollRatio'> {
  return {
    workflowTaskPollerBehavior: c.WORKFLOW_TASK_POLLERS === 'autoscaling'
      ? { type: 'autoscaling' }
      : { type: 'simple-maximum', maximum: c.WORKFLOW_TASK_POLLERS },
    nonStickyToStickyPollRatio: c.WORKFLOW_NONSTICKY_POLL_RATIO,
  };
}

/**
 * The service's activities, over the providers the composition root built for this process, and
 * its Temporal client (the reconciler describes and starts workflows with it).
 */
export function createActivities(deps: { orm: Orm; config: Config; providers: Providers; temporal?: TemporalHandle }) {
  const d = { orm: deps.orm, config: deps.config, ...deps.providers };
  return {
    ...createOrderActivities(d),
    ...createPaymentActivities(d),
    ...createEvmCheckoutActivities(d),
    ...createRedemptionActivities(d),
    ...createWebhookActivities(d),
    ...createProcurementActivities(d),
    ...createReconcileActivities({ orm: deps.orm, config: deps.config, temporal: deps.temporal }),
  };
}

type ActivityMap = Record<string, (...args: never[]) => unknown>;

/** What the worker runs: the service's activities over `providers`, or a test's own `activities`. */
export type WorkerActivities = { providers: Providers; activities?: undefined } | { activities: ActivityMap; providers?: undefined };

export const workflowInterceptorsPath = require.resolve('../../workflows/interceptors');

export async function bundleWorkflows(): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [workflowInterceptorsPath], failureConverterPath, logger: quietBundlerLogger });
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

export async function createWorker(opts: WorkerActivities & {
  address: string;
  namespace: string;
  taskQueue: string;
  orm: Orm;
  config: Config;
  /** The process's Temporal client, for the activities that start workflows (the reconciler's). */
  temporal?: TemporalHandle;
  workflowBundle?: WorkflowBundle;
  /** Defaults to the safe-failure activity interceptor; tests may replace it. */
  interceptors?: WorkerInterceptors;
  /** Defaults to the service's (encrypting codec, failures as encoded payloads); tests may replace it. */
  dataConverter?: DataConverter;
}): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: opts.address });
  try {
    const worker = await Worker.create({
      connection,
      namespace: opts.namespace,
      taskQueue: opts.taskQueue,
      workflowBundle: opts.workflowBundle ?? (await bundleWorkflows()),
      activities: opts.providers ? createActivities({ orm: opts.orm, config: opts.config, providers: opts.providers, temporal: opts.temporal }) : opts.activities,
      interceptors: opts.interceptors ?? { activity: [safeActivityFailures] },
      dataConverter: opts.dataConverter ?? dataConverter(parseKeyRing(opts.config.TEMPORAL_PAYLOAD_KEYS)),
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
