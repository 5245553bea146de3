import { randomBytes } from 'node:crypto';
import { Client as PgClient } from 'pg';
import {
  ensureTemporalServerBinaries,
  startTemporalServer,
  type TemporalServer,
  type TemporalServerOptions,
} from '../../src/dev/temporal-server';

// A test file's own production Temporal server (SQL persistence on the test run's Postgres,
// TEST_DATABASE_URL), in two databases of its own that go when the file ends.

export interface TestTemporalServer {
  server: TemporalServer;
  /** Its two databases' name prefix, for tests that read what the SQL store holds. */
  prefix: string;
  /** Stops the server and drops its databases. */
  stop(): Promise<void>;
}

/**
 * Starts the server, or resolves to the reason it cannot run here (the binaries cannot be built:
 * no Go toolchain, no module proxy); the caller skips and says so.
 */
export async function startTestTemporalServer(
  opts: Omit<TemporalServerOptions, 'postgres' | 'databaseUrl' | 'databasePrefix'> = {},
): Promise<TestTemporalServer | { unavailable: string }> {
  try {
    await ensureTemporalServerBinaries();
  } catch (err) {
    return { unavailable: err instanceof Error ? err.message : String(err) };
  }
  const prefix = `tsrv_${randomBytes(4).toString('hex')}`;
  const server = await startTemporalServer({
    ...opts,
    postgres: process.env.TEST_DATABASE_URL!,
    databasePrefix: prefix,
  });
  return {
    server,
    prefix,
    async stop() {
      await server.stop();
      const admin = new PgClient({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      for (const db of [server.databases.default, server.databases.visibility]) {
        await admin.query(`drop database if exists "${db}" with (force)`).catch(() => undefined);
      }
      await admin.end();
    },
  };
}
