import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import { DEV_SECRETS } from '../../src/config';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { bundleWorkflows } from '../../src/temporal/worker';

// Workflow-level tests: the real workflow code on the test run's Temporal dev server, with the
// activities stubbed (jest.fn). No time skipping: its test server is a download this machine
// cannot make, so durations come from the workflows' inputs and tests use seconds.

export interface WorkflowEnv {
  client: Client;
  taskQueue(): string;
  /** Runs `fn` while a worker with these (stubbed) activities serves `taskQueue`. */
  withWorker<T>(taskQueue: string, activities: Record<string, (...args: any[]) => unknown>, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** The service's data converter with this test run's key, as every client and worker uses it. */
const converter = () => dataConverter(parseKeyRing(process.env.TEMPORAL_PAYLOAD_KEYS ?? DEV_SECRETS.TEMPORAL_PAYLOAD_KEYS));

/** On the test run's dev server, or on `address` (a server a test started for itself). */
export async function workflowEnv(address = process.env.TEST_TEMPORAL_ADDRESS): Promise<WorkflowEnv> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  if (!address) throw new Error('TEST_TEMPORAL_ADDRESS is not set: run the tests through jest (test/global-setup.mjs)');
  const [nativeConnection, connection, bundle] = await Promise.all([
    NativeConnection.connect({ address }),
    Connection.connect({ address }),
    bundleWorkflows() as Promise<WorkflowBundle>,
  ]);
  const client = new Client({ connection, dataConverter: converter() });
  return {
    client,
    taskQueue: () => `wf-${randomBytes(5).toString('hex')}`,
    async withWorker(taskQueue, activities, fn) {
      const worker = await Worker.create({ connection: nativeConnection, taskQueue, workflowBundle: bundle, activities, dataConverter: converter() });
      return worker.runUntil(fn);
    },
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** A fresh id for a workflow of this test. */
export const uniqueId = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;
