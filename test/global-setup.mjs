// Starts the servers the API tests need, on loopback only: embedded Postgres (or TEST_DATABASE_URL)
// and the Temporal dev server (or TEST_TEMPORAL_ADDRESS). Workers read their addresses from env.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { register } from 'tsx/cjs/api';

// The dev-stack helpers are TypeScript (CommonJS); tsx loads them here, outside jest's module system.
register();
const require = createRequire(import.meta.url);

// Ports the servers bind after we chose them: from below the ephemeral range (test/helpers/ports.ts).
const { freePort } = require('./helpers/ports.ts');

export default async function globalSetup() {
  const stops = [];
  // Every test's Temporal clients and workers (and the worker processes they spawn) encrypt
  // payloads with this run's own key.
  process.env.TEMPORAL_PAYLOAD_KEYS ??= `test:${randomBytes(32).toString('base64')}`;
  const root = mkdtempSync(join(tmpdir(), 'wholesale-test-'));
  if (!process.env.TEST_DATABASE_URL) {
    const { startEmbeddedPostgres } = require('../src/dev/postgres.ts');
    const pg = await startEmbeddedPostgres({ dataDir: join(root, 'pg'), port: await freePort(), database: 'postgres' });
    process.env.TEST_DATABASE_URL = pg.url;
    stops.push(() => pg.stop());
  }
  if (!process.env.TEST_TEMPORAL_ADDRESS) {
    const { startDevTemporal } = require('../src/dev/temporal.ts');
    const temporal = await startDevTemporal({ port: await freePort(), uiPort: 0, namespace: 'default' });
    process.env.TEST_TEMPORAL_ADDRESS = temporal.address;
    stops.unshift(() => temporal.stop());
  }
  globalThis.__wholesaleStops = stops;
}
