// Starts the servers the API tests need, on loopback only: embedded Postgres (or TEST_DATABASE_URL)
// and the Temporal dev server (or TEST_TEMPORAL_ADDRESS). Workers read their addresses from env.
// It also gets, once per machine, what the selected tests need and a fresh machine lacks: a
// Chromium for test/browser (CHROMIUM_PATH), the production Temporal server's binaries, and helm
// with the manifest checker (test/deploy); the Temporal CLI is found or built by startDevTemporal.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/cjs/api';
import { ensureChromium } from '../scripts/ensure-chromium.mjs';
import { ensureTemporalServer } from '../scripts/ensure-temporal-server.mjs';
import { ensureDeployTools } from '../scripts/ensure-deploy-tools.mjs';

// The dev-stack helpers are TypeScript (CommonJS); tsx loads them here, outside jest's module system.
register();
const require = createRequire(import.meta.url);
const testRoot = dirname(fileURLToPath(import.meta.url));

// Ports the servers bind after we chose them: from below the ephemeral range (test/helpers/ports.ts).
const { freePort } = require('./helpers/ports.ts');

/** Whether this run selects any test file under `dir` (all of them when no path pattern was given). */
function selects(globalConfig, dir, only = () => true) {
  const files = readdirSync(join(testRoot, dir))
    .filter((f) => f.endsWith('.test.ts') && only(f))
    .map((f) => join(testRoot, dir, f));
  const patterns = globalConfig?.testPathPatterns;
  if (!patterns?.isSet?.()) return true;
  const executor = patterns.toExecutor({ rootDir: globalConfig.rootDir });
  return files.some((f) => executor.isMatch(f));
}

export default async function globalSetup(globalConfig) {
  const stops = [];
  globalThis.__wholesaleStops = stops;
  // Every test's Temporal clients and workers (and the worker processes they spawn) encrypt
  // payloads with this run's own key.
  process.env.TEMPORAL_PAYLOAD_KEYS ??= `test:${randomBytes(32).toString('base64')}`;
  if (selects(globalConfig, 'browser')) {
    // test/helpers/browser.ts launches CHROMIUM_PATH, or fails with the reason printed here.
    try {
      const chromium = await ensureChromium();
      process.env.CHROMIUM_PATH = chromium.path;
      process.stderr.write(`\n${chromium.line}\n`);
    } catch (err) {
      process.env.WHOLESALE_NO_CHROMIUM = err instanceof Error ? err.message : String(err);
      process.stderr.write(`\n${process.env.WHOLESALE_NO_CHROMIUM}\n`);
    }
  }
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
  // The workflow code, bundled once for every test file's workers (test/helpers/workflow-bundle.ts)
  // rather than by webpack in each file, from the same sources.
  if (['api', 'browser', 'evm', 'fuzz', 'replay', 'workflows'].some((dir) => selects(globalConfig, dir))) {
    const { writeWorkflowBundle } = require('../src/temporal/workflow-bundle.ts');
    process.env.TEST_WORKFLOW_BUNDLE = await writeWorkflowBundle(join(root, 'workflow-bundle.js'));
  }
  // Built here rather than in the tests that use it, so its progress shows and two test workers
  // never build it at once. A failure is left to those tests, which say why.
  if (
    selects(globalConfig, 'api', (f) => f === 'temporal-server.test.ts' || f === 'temporal-tls.test.ts') ||
    selects(globalConfig, 'topology') ||
    selects(globalConfig, 'deploy', (f) => f === 'production-build.test.ts' || f === 'compose.test.ts')
  ) {
    await ensureTemporalServer().catch((err) =>
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`),
    );
  }
  // The run's directory (Postgres's data, the workflow bundle), once the servers writing into it stopped.
  stops.push(async () => rmSync(root, { recursive: true, force: true }));
  // helm and the manifest checker for the Helm chart's test, built once per machine the same way.
  if (selects(globalConfig, 'deploy', (f) => f === 'helm.test.ts')) {
    await ensureDeployTools().catch((err) =>
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`),
    );
  }
}
