import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Worker, WorkflowBundle } from '@temporalio/worker';
import type { Config } from './config';
import { AccountSchema } from './db/entities';
import { initOrm, migrate, type Orm } from './db/orm';
import { seedCatalog } from './db/seed';
import { registerSearchAttributes } from './dev/temporal';
import { createApp } from './http/app';
import { createAccount, createApiKey } from './services/accounts';
import { adjustBalance } from './services/admin';
import { WebhookDispatcher } from './services/webhook-dispatcher';
import { connectTemporal, type TemporalHandle } from './temporal/client';
import { createWorker } from './temporal/worker';

export interface Services {
  orm: Orm;
  temporal: TemporalHandle;
  worker?: Worker;
  /** The webhook outbox relay; runs wherever the worker runs. */
  dispatcher?: WebhookDispatcher;
  server?: Server;
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
  /** Tests bundle the workflow code once and pass it in. */
  workflowBundle?: WorkflowBundle;
}): Promise<Services> {
  const { config, logger } = opts;
  const orm = await initOrm(opts.databaseUrl, {}, { quietMigrations: config.LOG_LEVEL === 'silent' });
  await migrate(orm);
  const temporal = await connectTemporal({ address: opts.temporalAddress, namespace: config.TEMPORAL_NAMESPACE, taskQueue: config.TEMPORAL_TASK_QUEUE });
  if (opts.registerSearchAttributes) await registerSearchAttributes(temporal.connection, config.TEMPORAL_NAMESPACE);

  let worker: Worker | undefined;
  let workerRun: Promise<void> | undefined;
  let dispatcher: WebhookDispatcher | undefined;
  if (opts.worker) {
    const created = await createWorker({ address: opts.temporalAddress, namespace: config.TEMPORAL_NAMESPACE, taskQueue: config.TEMPORAL_TASK_QUEUE, orm, config, workflowBundle: opts.workflowBundle });
    worker = created.worker;
    workerRun = worker.run().finally(() => created.connection.close());
    dispatcher = new WebhookDispatcher({ orm, temporal, config, logger, databaseUrl: opts.databaseUrl });
    await dispatcher.start();
  }

  let server: Server | undefined;
  if (opts.api) {
    const app = createApp({ orm, temporal, config, logger });
    server = await new Promise<Server>((ok) => {
      const s = app.listen(config.PORT, config.HOST, () => ok(s));
    });
  }

  return {
    orm,
    temporal,
    worker,
    dispatcher,
    server,
    // Graceful: stop taking requests and let in-flight ones finish, then let the worker finish
    // its activities, then close connections.
    async stop() {
      if (server) await new Promise<void>((ok) => server!.close(() => ok()));
      await dispatcher?.stop();
      if (worker) {
        // The Temporal runtime may already be draining the worker on SIGINT/SIGTERM.
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await workerRun;
      }
      await temporal.connection.close();
      await orm.close();
    },
  };
}

/** The demo catalog and account of `npm start`; the key is kept in the state dir so it stays the same. */
export async function prepareDemo(orm: Orm, config: Config): Promise<{ accountId: string; apiKey: string }> {
  const em = orm.em.fork();
  await seedCatalog(em);
  const keyFile = resolve(config.STATE_DIR, 'demo-account.json');
  if (existsSync(keyFile)) {
    const saved = JSON.parse(readFileSync(keyFile, 'utf8')) as { accountId: string; apiKey: string };
    if (await em.findOne(AccountSchema, { id: saved.accountId })) return saved;
  }
  const existing = await em.findOne(AccountSchema, { name: 'demo' });
  const demo = existing
    ? { accountId: existing.id, apiKey: await createApiKey(em, existing.id) }
    : await createAccount(em, 'demo');
  if (!existing) await adjustBalance(em, { accountId: demo.accountId, amount: '100.00', note: 'demo starting balance', levelThresholds: config.LEVEL_THRESHOLDS });
  mkdirSync(resolve(config.STATE_DIR), { recursive: true });
  writeFileSync(keyFile, JSON.stringify(demo), { mode: 0o600 });
  return demo;
}
