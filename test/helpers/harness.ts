import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Client as PgClient } from 'pg';
import { Runtime, DefaultLogger, type WorkflowBundleOption } from '@temporalio/worker';
import { loadConfig, type Config } from '../../src/config';
import { startServices, type Services } from '../../src/bootstrap';
import { seedCatalog } from '../../src/db/seed';
import { createLogger } from '../../src/logger';
import { createAccount } from '../../src/services/accounts/accounts';
import { adjustBalance } from '../../src/services/payments/admin';
import { freePort } from './ports';
import { testWorkflowBundle } from './workflow-bundle';
import { client } from './http';
import type { SandboxRedemptionUpstream } from '../../src/providers/sandbox/sandbox-upstream';

let runtimeInstalled = false;
let bundle: Promise<WorkflowBundleOption> | undefined;

/** A port free on 127.0.0.1 right now, outside the ephemeral range (see ./ports). */
export { freePort };

/** A fresh database on the test Postgres server, so each test file owns its data. */
export async function createTestDatabase(): Promise<string> {
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) throw new Error('TEST_DATABASE_URL is not set: run the tests through jest (test/global-setup.mjs)');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const client = new PgClient({ connectionString: admin });
  await client.connect();
  await client.query(`create database "${name}"`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface Harness {
  config: Config;
  services: Services;
  baseUrl: string;
  apiUrl: string;
  databaseUrl: string;
  /** A new account holding `balance` (an `adjust` ledger row), with its API key. */
  account(balance?: string): Promise<{ accountId: string; apiKey: string }>;
  stop(): Promise<void>;
}

/**
 * The real service for one test file: its own database (migrated and seeded), the API on a
 * loopback port and a worker on its own task queue of the shared Temporal dev server.
 */
export async function startHarness(
  env: Record<string, string> = {},
  opts: { worker?: boolean; databaseUrl?: string } = {},
): Promise<Harness> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    runtimeInstalled = true;
  }
  // Its own database on the shared test server, or one the test brings (a server it can stop).
  const databaseUrl = opts.databaseUrl ?? (await createTestDatabase());
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS,
    TEMPORAL_TASK_QUEUE: `test-${randomBytes(5).toString('hex')}`,
    PORT: String(port),
    LOG_LEVEL: 'silent',
    TEMPORAL_PAYLOAD_KEYS: process.env.TEMPORAL_PAYLOAD_KEYS ?? '',
    // No reconciler schedule: one per test file would keep firing on the shared server after the
    // file ends. The reconciler's own tests ask for one.
    RECONCILE_SECONDS: '0',
    ...env,
  });
  if (opts.worker !== false) bundle ??= testWorkflowBundle();
  const services = await startServices({
    config,
    databaseUrl,
    temporalAddress: config.TEMPORAL_ADDRESS!,
    registerSearchAttributes: true,
    logger: createLogger(config.LOG_LEVEL),
    api: true,
    worker: opts.worker ?? true,
    workflowBundle: opts.worker === false ? undefined : await bundle,
  });
  await seedCatalog(services.orm.em.fork());
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    config,
    services,
    baseUrl,
    apiUrl: `${baseUrl}/wholesale/v1`,
    databaseUrl,
    async account(balance = '0') {
      const em = services.orm.em.fork();
      const created = await createAccount(em, `acct-${randomBytes(3).toString('hex')}`);
      if (balance !== '0') {
        await adjustBalance(em, {
          accountId: created.accountId,
          amount: balance,
          note: 'test funding',
          levelThresholds: config.LEVEL_THRESHOLDS,
        });
      }
      return created;
    },
    stop: () => services.stop(),
  };
}

/** A reseller on `h`: a funded account and a client for its key. */
export async function reseller(h: Harness, balance = '0') {
  const a = await h.account(balance);
  return { ...a, api: client(h.apiUrl, a.apiKey) };
}

/**
 * The production worker (`npm run worker`) as a child process on the harness's database and task
 * queue, for tests that kill it (start the harness with `{ worker: false }`).
 */
export function startWorkerProcess(h: Harness, env: Record<string, string>): ChildProcess {
  return startServiceProcess('worker', h, env);
}

/**
 * The production API (`npm run api`) as a child process on the harness's database and task queue,
 * listening on `env.PORT`: for tests that measure or kill the process that answers.
 */
export function startApiProcess(h: Harness, env: Record<string, string> & { PORT: string }): ChildProcess {
  return startServiceProcess('api', h, env);
}

function startServiceProcess(role: 'api' | 'worker', h: Harness, env: Record<string, string>): ChildProcess {
  // Its output is piped (and must be read) only when the test asks for a log level.
  return spawn(process.execPath, ['--import', 'tsx', `src/${role}.ts`], {
    cwd: resolve(__dirname, '..', '..'),
    stdio: env.LOG_LEVEL ? ['ignore', 'pipe', 'pipe'] : 'ignore',
    env: {
      ...process.env,
      LOG_LEVEL: 'silent',
      ...env,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_ADDRESS: h.config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: h.config.TEMPORAL_TASK_QUEUE,
      PUBLIC_BASE_URL: h.baseUrl,
    },
  });
}

/**
 * The sandbox redemption upstream of the harness's service (REDEMPTION_UPSTREAM=sandbox), looked
 * up at each use, so a test file can name it before its harness starts.
 */
export function sandboxUpstreamOf(harness: () => Harness): SandboxRedemptionUpstream {
  const current = () => {
    const upstream = harness().services.providers.sandboxUpstream;
    if (!upstream) throw new Error('this harness plays no sandbox upstream (REDEMPTION_UPSTREAM is not sandbox)');
    return upstream;
  };
  return new Proxy({} as SandboxRedemptionUpstream, {
    get: (_target, name) => {
      const upstream = current();
      const value = Reflect.get(upstream, name, upstream);
      return typeof value === 'function' ? value.bind(upstream) : value;
    },
  });
}
