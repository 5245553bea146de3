import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { createOrderActivities } from '../../activities/orders';
import { createPaymentActivities } from '../../activities/payments';
import { createRedemptionActivities } from '../../activities/redemptions';
import { createWebhookActivities } from '../../activities/webhooks';
import { createProcurementActivities } from '../../activities/procurement';

export const workflowsPath = require.resolve('../../workflows');

export function createActivities(deps: { orm: Orm; config: Config }) {
  return { ...createOrderActivities(deps), ...createPaymentActivities(deps), ...createRedemptionActivities(deps), ...createWebhookActivities(deps), ...createProcurementActivities(deps) };
}

export async function bundleWorkflows(): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
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
}): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: opts.address });
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: opts.workflowBundle ?? (await bundleWorkflows()),
    activities: opts.activities ?? createActivities({ orm: opts.orm, config: opts.config }),
    // Let in-flight activities finish on shutdown.
    shutdownGraceTime: '20 seconds',
  });
  return { worker, connection };
}
