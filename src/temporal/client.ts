import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { dataConverter, parseKeyRing } from './codec';
import { temporalConnectionOptions, type TemporalConnectionOptions } from './connection';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  namespace: string;
  taskQueue: string;
  /** How long a request waits for a placement update (PLACEMENT_TIMEOUT_MS). */
  placementDeadlineMs: number;
}

/**
 * One connection and client per process, never per request; every payload it sends is encrypted.
 * The connection options come from temporalConnectionOptions (TLS, API key) outside tests.
 */
export async function connectTemporal(
  opts: TemporalConnectionOptions & {
    namespace: string;
    taskQueue: string;
    payloadKeys: string;
    placementDeadlineMs?: number;
  },
): Promise<TemporalHandle> {
  const connection = await Connection.connect({ address: opts.address, tls: opts.tls, apiKey: opts.apiKey });
  const client = new Client({
    connection,
    namespace: opts.namespace,
    dataConverter: dataConverter(parseKeyRing(opts.payloadKeys)),
  });
  return {
    client,
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    placementDeadlineMs: opts.placementDeadlineMs ?? 15_000,
  };
}

/** The same, for a command-line tool working against `npm start`'s stack or TEMPORAL_ADDRESS. */
export function connectTemporalFor(config: Config): Promise<TemporalHandle> {
  return connectTemporal({
    ...temporalConnectionOptions(config),
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    payloadKeys: config.TEMPORAL_PAYLOAD_KEYS,
    placementDeadlineMs: config.PLACEMENT_TIMEOUT_MS,
  });
}
