// The bar the benches measure the service against: the engine's empty update-with-start
// (./workflows.ts), on a worker in the bench's own process with the service's workflow-task
// settings, so the bar is the engine as the service runs it.
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { Config } from '../src/config';
import { workflowPolling } from '../src/temporal/temporal-worker';
import { benchUpdate } from './workflows';

/** A worker of the empty workflows on `taskQueue`; the caller runs and shuts it down. */
export function barWorker(opts: {
  connection: NativeConnection;
  taskQueue: string;
  config: Config;
  namespace?: string;
  dataConverter?: DataConverter;
}): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace ?? opts.config.TEMPORAL_NAMESPACE,
    taskQueue: opts.taskQueue,
    workflowsPath: require.resolve('./workflows'),
    dataConverter: opts.dataConverter,
    ...workflowPolling(opts.config),
  });
}

/** One empty update-with-start of `workflowId` on `taskQueue`; whether it answered what it was sent. */
export async function emptyUpdateWithStart(client: Client, taskQueue: string, workflowId: string): Promise<boolean> {
  const startWorkflowOperation = new WithStartWorkflowOperation('benchWorkflow', {
    workflowId,
    taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  return (await client.workflow.executeUpdateWithStart(benchUpdate, { args: ['x'], startWorkflowOperation })) === 'x';
}
