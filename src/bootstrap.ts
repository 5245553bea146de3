import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Worker, WorkflowBundleOption } from '@temporalio/worker';
import { ConfigError, type Config } from './config';
import { AccountSchema } from './db/entities/all-entities';
import { initOrm, migrate, pendingMigrations, type Orm } from './db/orm';
import { auditLogGuard } from './db/service-role';
import { seedCatalog } from './db/seed';
import { registerSearchAttributes } from './dev/temporal';
import { createApp } from './app';
import { answerMalformedHttp } from './http/hygiene';
import { startOpsServer } from './ops-server';
import { createProviders, type Providers } from './providers/all-providers';
import { createAccount, createApiKey } from './services/accounts/accounts';
import { adjustBalance } from './services/payments/admin';
import { syncSupplierCatalog } from './services/supply/supplier-costs';
import { accountLoginWorks, setAccountLogin } from './services/accounts/users';
import { WebhookDispatcher } from './services/webhooks/webhook-dispatcher';
import { admissionSettingsOf, PlacementGate } from './services/admission';
import { AnswerKey } from './temporal/sealed-answer';
import { WorkerHeartbeat } from './services/worker-heartbeat';
import { WorkerWatch } from './services/worker-watch';
import { connectTemporal, type TemporalHandle } from './temporal/client';
import { temporalConnectionOptions } from './temporal/connection';
import { keepReconcileSchedule } from './temporal/reconcile-schedule';
import { keepChainScanners } from './temporal/chain-scanners';
import { evmCheckoutStatus, openEvmCheckout } from './services/payments/evm-checkout-opening';
import { notifyPaid } from './temporal/payment-notices';
import { coreMetricsUrl } from './temporal/runtime';
import { createActivities } from '../activities/all-activities';
import { createWorker } from './temporal/temporal-worker';
import { workerBundle } from './temporal/workflow-bundle';
import { WorkerSupervisor } from './temporal/worker-supervisor';

export interface Services {
  orm: Orm;
  temporal: TemporalHandle;
  /** The payment provider, supplier and redemption upstream that the worker and the API share. */
  providers: Providers;
  /** The worker running right now (a failed one is replaced by the supervisor). */
  readonly worker?: Worker;
  supervisor?: WorkerSupervisor;
  /** The webhook outbox relay; runs wherever the worker runs. */
  dispatcher?: WebhookDispatcher;
  server?: Server;
  /** What every part logs through (operators' lines: requests, the worker, the codec server). */
  logger: Logger;
  stop(): Promise<void>;
}

/** Connects to Postgres (migrating it) and Temporal, then runs the worker and/or the API. */
export async function startServices(opts: {
  config: Config;
  databaseUrl: string;
  temporalAddress: string;
  registerSearchAttributes: boolean;
  logger: Logger;
  api: boolean;
  worker: boolean;
  /** Tests bundle the workflow code once and pass it in; otherwise the prebuilt bundle or, in development, one made now. */
  workflowBundle?: WorkflowBundleOption;
  /** A lone worker process gives up after this many failures in a row and calls `onWorkerGiveUp`. */
  workerMaxFailures?: number;
  onWorkerGiveUp?: (err: unknown) => void;
}): Promise<Services> {
  const { config, logger } = opts;
  if (config.devSecrets.length > 0) {
    logger.warn(
      { variables: config.devSecrets },
      'built-in development secrets in use; set your own before production (NODE_ENV=production refuses them)',
    );
  }
  // First, so a production worker without its prebuilt bundle is refused before it touches anything.
  const workflowBundle = opts.worker ? (opts.workflowBundle ?? (await workerBundle(config))) : undefined;
  // The migrator's own lines are not JSON: it stays quiet and what it did is one log line.
  const orm = await initOrm(opts.databaseUrl, {}, { quietMigrations: true });
  await prepareSchema(orm, config, logger);
  await reportAuditLogGuard(orm, config, logger);
  // The catalog says which supplier serves each direct-code product, as the supplier's settings do.
  const remapped = await syncSupplierCatalog(orm.em.fork(), config);
  if (remapped.length > 0)
    logger.info(
      { products: remapped, supplier: config.SUPPLIER_PROVIDER },
      'supplier catalog updated from the supplier settings',
    );
  // TLS and the API key from the config, to whichever address the caller found Temporal at.
  const temporal = await connectTemporal({
    ...temporalConnectionOptions(config, opts.temporalAddress),
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    payloadKeys: config.TEMPORAL_PAYLOAD_KEYS,
    placementDeadlineMs: config.PLACEMENT_TIMEOUT_MS,
  });
  // Built once for the process (a bad sandbox script or a token whose decimals are not what the
  // config says fails the start here): every worker the supervisor (re)creates and the API use these.
  const providers = createProviders({
    orm,
    config,
    temporal,
    evmCheckouts: (evm) => ({
      open: (req) => openEvmCheckout({ orm, config, temporal, evm }, req),
      status: (checkoutId) => evmCheckoutStatus(orm, checkoutId),
    }),
  });
  const mismatches = (await providers.evm?.verifyTokens(logger)) ?? [];
  if (mismatches.length > 0) {
    await temporal.connection.close();
    await orm.close();
    throw new ConfigError(`Invalid configuration:\n${mismatches.join('\n')}`);
  }
  if (opts.registerSearchAttributes) await registerSearchAttributes(temporal.connection, config.TEMPORAL_NAMESPACE);

  let supervisor: WorkerSupervisor | undefined;
  let heartbeat: WorkerHeartbeat | undefined;
  let dispatcher: WebhookDispatcher | undefined;
  let stopReconcileSchedule: (() => void) | undefined;
  let stopChainScanners: (() => void) | undefined;
  if (opts.worker) {
    const activities = createActivities({
      orm,
      config,
      providers,
      temporal,
      notifyPaid: (order) => notifyPaid(temporal, config, order),
    });
    supervisor = new WorkerSupervisor({
      create: () =>
        createWorker({
          ...temporalConnectionOptions(config, opts.temporalAddress),
          namespace: config.TEMPORAL_NAMESPACE,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          config,
          activities,
          workflowBundle,
        }),
      logger,
      maxConsecutiveFailures: opts.workerMaxFailures,
      onGiveUp: opts.onWorkerGiveUp,
      // The heartbeat row is written before the worker polls, so an API process that sees an answer
      // of this worker can see the worker too.
      beforePolling: () => heartbeat!.beatNow(),
    });
    heartbeat = new WorkerHeartbeat({
      orm,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      worker: supervisor,
      everyMs: config.WORKER_HEARTBEAT_MS,
      logger,
      coreMetricsUrl: coreMetricsUrl(),
    });
    await supervisor.start();
    await heartbeat.start();
    dispatcher = new WebhookDispatcher({ orm, temporal, config, logger, databaseUrl: opts.databaseUrl });
    await dispatcher.start();
    // The reconciler runs where the workers are, on a Temporal Schedule (RECONCILE_SECONDS=0: none).
    if (config.RECONCILE_SECONDS > 0)
      stopReconcileSchedule = await keepReconcileSchedule({ temporal, everySeconds: config.RECONCILE_SECONDS, logger });
    // One scanner per chain reads it for every open checkout (PAYMENT_PROVIDER=evm).
    if (providers.evm)
      stopChainScanners = await keepChainScanners({
        temporal,
        chainIds: providers.evm.chains.map((c) => c.chainId),
        logger,
      });
  }

  let server: Server | undefined;
  let watch: WorkerWatch | undefined;
  if (opts.api) {
    // What the placements' admission control knows of the workers: their heartbeat rows.
    watch = new WorkerWatch({
      orm,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      staleMs: config.WORKER_HEARTBEAT_STALE_MS,
      everyMs: Math.ceil(config.WORKER_HEARTBEAT_MS / 2),
      logger,
    });
    await watch.start();
    const admission = new PlacementGate(admissionSettingsOf(config), watch);
    const app = createApp({
      orm,
      temporal,
      providers,
      config,
      logger,
      worker: supervisor,
      admission,
      answerKey: AnswerKey.create(),
    });
    server = await new Promise<Server>((ok) => {
      const s = app.listen(config.PORT, config.HOST, () => ok(s));
    });
    server.keepAliveTimeout = config.HTTP_KEEP_ALIVE_SECONDS * 1000;
    answerMalformedHttp(server);
  }
  const ops = config.METRICS_PORT
    ? await startOpsServer(
        { orm, temporal, config, logger, worker: supervisor, providers },
        config.METRICS_PORT,
        config.METRICS_HOST,
      )
    : undefined;

  return {
    orm,
    temporal,
    providers,
    get worker() {
      return supervisor?.worker;
    },
    supervisor,
    dispatcher,
    server,
    logger,
    // Graceful: stop taking requests and let in-flight ones finish, then let the worker finish
    // its activities, then close connections.
    async stop() {
      if (server) await closeServer(server);
      if (ops) await closeServer(ops);
      await watch?.stop();
      // The API processes stop sending placements here before the worker drains.
      await heartbeat?.stop();
      stopReconcileSchedule?.();
      stopChainScanners?.();
      await dispatcher?.stop();
      await supervisor?.stop();
      await temporal.connection.close();
      await orm.close();
    },
  };
}

/**
 * Migrates (MIGRATE_ON_START, the default; replicas starting together wait for one another), or,
 * where a Job migrates before the processes start, refuses to run on a schema this code outgrew.
 */
export async function prepareSchema(
  orm: Orm,
  config: Pick<Config, 'MIGRATE_ON_START' | 'DATABASE_MIGRATION_URL'>,
  logger: Logger,
): Promise<string[]> {
  if (config.MIGRATE_ON_START) {
    const onWait = () => logger.info('another process is migrating the database; waiting for it');
    const applied = await migrate(orm, { migrationUrl: config.DATABASE_MIGRATION_URL, quiet: true, onWait });
    if (applied.length > 0) logger.info({ migrations: applied }, 'migrations applied');
    return applied;
  }
  const pending = await pendingMigrations(orm);
  if (pending.length > 0) {
    throw new ConfigError(
      `Invalid configuration:\n  MIGRATE_ON_START: false, and the database lacks ${pending.length} migration(s) of this version (${pending.join(', ')}): run \`npm run migrate\` first`,
    );
  }
  return [];
}

/**
 * In production, says once at start whether the audit log is append-only against this process's
 * own database role, and warns when it is not (docs/operations.md, *Database roles and the audit log*).
 */
async function reportAuditLogGuard(orm: Orm, config: Config, logger: Logger): Promise<void> {
  if (config.NODE_ENV !== 'production') return;
  const guard = await auditLogGuard(orm.em.fork());
  if (guard === 'grants') logger.info({ auditLog: guard }, 'audit log: this database role may only insert and read it');
  else
    logger.warn(
      { auditLog: guard },
      'audit log: this database role could rewrite it or disable its triggers; run the service as a role that owns nothing (DATABASE_MIGRATION_URL)',
    );
}

export const DEMO_EMAIL = 'demo@example.com';

export interface Demo {
  accountId: string;
  apiKey: string;
  /** Signs in to the account area (/account). */
  email: string;
  password: string;
}

/**
 * The demo catalog and account of `npm start`: an API key and an account-area login, kept in the
 * state dir (mode 0600) so they stay the same across restarts.
 */
export async function prepareDemo(orm: Orm, config: Config): Promise<Demo> {
  const em = orm.em.fork();
  await seedCatalog(em);
  await syncSupplierCatalog(em, config);
  const keyFile = resolve(config.STATE_DIR, 'demo-account.json');
  const save = (demo: Demo) => {
    mkdirSync(resolve(config.STATE_DIR), { recursive: true });
    writeFileSync(keyFile, JSON.stringify(demo), { mode: 0o600 });
    return demo;
  };
  const newPassword = () => randomBytes(12).toString('base64url');
  if (existsSync(keyFile)) {
    const saved = JSON.parse(readFileSync(keyFile, 'utf8')) as Partial<Demo> & { accountId: string; apiKey: string };
    if (await em.findOne(AccountSchema, { id: saved.accountId })) {
      if (saved.password && (await accountLoginWorks(em, saved.accountId, saved.password))) return saved as Demo;
      // A state dir from before the account area: give the demo account its login now.
      const password = newPassword();
      const user = await setAccountLogin(em, saved.accountId, { email: DEMO_EMAIL, password });
      return save({ accountId: saved.accountId, apiKey: saved.apiKey, email: user.email, password });
    }
  }
  const existing = await em.findOne(AccountSchema, { name: 'demo' });
  const demo = existing
    ? { accountId: existing.id, apiKey: await createApiKey(em, existing.id) }
    : await createAccount(em, 'demo');
  if (!existing)
    await adjustBalance(em, {
      accountId: demo.accountId,
      amount: '100.00',
      note: 'demo starting balance',
      levelThresholds: config.LEVEL_THRESHOLDS,
    });
  const password = newPassword();
  const user = await setAccountLogin(em, demo.accountId, { email: DEMO_EMAIL, password });
  return save({ ...demo, email: user.email, password });
}

/**
 * Stops accepting connections and lets in-flight requests finish, but not forever: a request
 * still open after the grace period (a client or upstream that hangs) is cut, so shutdown ends.
 * A connection whose request finishes is closed as soon as it is idle, not after the keep-alive
 * timeout (65 s by default).
 */
function closeServer(
  server: { close(cb: () => void): unknown; closeIdleConnections(): void; closeAllConnections(): void },
  graceMs = 10_000,
): Promise<void> {
  return new Promise<void>((ok) => {
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    cut.unref();
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    idle.unref();
    server.close(() => {
      clearTimeout(cut);
      clearInterval(idle);
      ok();
    });
    server.closeIdleConnections();
  });
}
