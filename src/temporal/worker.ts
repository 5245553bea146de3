import { NativeConnection, Worker, bundleWorkflowCode, type WorkerInterceptors, type WorkflowBundle } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { createOrderActivities } from '../../activities/orders';
import { createPaymentActivities } from '../../activities/payments';
import { createRedemptionActivities } from '../../activities/redemptions';
import { createWebhookActivities } from '../../activities/webhooks';
import { createProcurementActivities } from '../../activities/procurement';
import { safeActivityFailures } from './safe-failures';
import { dataConverter, failureConverterPath, parseKeyRing } from './codec';

export const workflowsPath = require.resolve('../../workflows');

export function createActivities(deps: { orm: Orm; config: Config }) {
  return { ...createOrderActivities(deps), ...createPaymentActivities(deps), ...createRedemptionActivities(deps), ...createWebhookActivities(deps), ...createProcurementActivities(deps) };
}

export const workflowInterceptorsPath = require.resolve('../../workflows/interceptors');

export async function bundleWorkflows(): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [workflowInterceptorsPath], failureConverterPath, logger: quietBundlerLogger });
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

export async function createWorker(opts: {
  address: string;
  namespace: string;
  taskQueue: string;
  orm: Orm;
  config: Config;
  workflowBundle?: WorkflowBundle;
  activities?: Record<string, (...args: never[]) => unknown>;
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
      activities: opts.activities ?? createActivities({ orm: opts.orm, config: opts.config }),
      interceptors: opts.interceptors ?? { activity: [safeActivityFailures] },
      dataConverter: opts.dataConverter ?? dataConverter(parseKeyRing(opts.config.TEMPORAL_PAYLOAD_KEYS)),
      // Let in-flight activities finish on shutdown.
      shutdownGraceTime: '20 seconds',
    });
    return { worker, connection };
  } catch (err) {
    await connection.close().catch(() => undefined);
    throw err;
  }
}
