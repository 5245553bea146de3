import { Client, Connection } from '@temporalio/client';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  namespace: string;
  taskQueue: string;
}

/** One connection and client per process, never per request. */
export async function connectTemporal(opts: { address: string; namespace: string; taskQueue: string }): Promise<TemporalHandle> {
  const connection = await Connection.connect({ address: opts.address });
  const client = new Client({ connection, namespace: opts.namespace });
  return { client, connection, namespace: opts.namespace, taskQueue: opts.taskQueue };
}
