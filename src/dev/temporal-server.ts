// The production Temporal server (`temporal-server`, SQL persistence on Postgres) as a child
// process: what production runs, instead of the dev server's SQLite. Used by `npm start` with
// DEV_TEMPORAL=server, by test/api/temporal-server.test.ts and by the topology harness.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../contracts/search-attributes';
import { registerSearchAttributes, type DevTemporal } from './temporal';
import { ensureTemporalServerBinaries } from './temporal-server-binaries';
import {
  dynamicConfigYaml,
  parseDynamicConfig,
  parsePostgresTarget,
  reusePorts,
  SERVER_DYNAMIC_CONFIG,
  serverConfigYaml,
  type FrontendTlsFiles,
  type PostgresTarget,
} from './temporal-server-config';
import type { TemporalConnectionOptions } from '../temporal/connection';
import { ensureDatabases, forgetMembers, setupSchemas } from './temporal-server-schema';

export { ensureTemporalServerBinaries } from './temporal-server-binaries';
export {
  parsePostgresTarget,
  SERVER_DYNAMIC_CONFIG,
  type FrontendTlsFiles,
  type PostgresTarget,
} from './temporal-server-config';

export interface TemporalServerOptions {
  /** Where Temporal keeps its data: a Postgres URL (its database part is only used to connect) or its parts. */
  postgres?: PostgresTarget | string;
  /** Alias of `postgres` as a URL. */
  databaseUrl?: string;
  /** Databases `<prefix>` and `<prefix>_visibility`, created if missing (default `temporal`). */
  databasePrefix?: string;
  /** Frontend gRPC port on 127.0.0.1 (default: a free one). Kept across restarts. */
  port?: number;
  /** Config files and the server log (default: a fresh temporary folder). */
  stateDir?: string;
  /** Alias of `stateDir`. */
  dir?: string;
  /** Created if missing, with the custom search attributes registered (default `default`). */
  namespace?: string;
  /** More dynamic config, as `name=value` (value parsed as JSON when it is JSON) like startDevTemporal's, or an object. */
  dynamicConfig?: string[] | Record<string, unknown>;
  /** Server log level (written to `<stateDir>/temporal-server.log`; default `warn`). */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Fixed once a database is set up (default 4). */
  numHistoryShards?: number;
  /** How long to wait for the server to answer (default 90 s). */
  startTimeoutMs?: number;
  /**
   * mTLS on the frontend (PEM files): its certificate and key, and the CA whose client certificates
   * it accepts. The certificate must name `localhost` and allow client use too (extendedKeyUsage
   * serverAuth and clientAuth): the server's own system worker and this module's readiness checks
   * present it to the frontend and check it by that name.
   */
  tls?: FrontendTlsFiles;
}

export interface TemporalServer extends DevTemporal {
  /** Always undefined: the server has no Web UI (that ships with the dev server and temporalio/ui). */
  uiUrl?: undefined;
  stateDir: string;
  logFile: string;
  databases: { default: string; visibility: string };
  /** The server process id while it runs. */
  readonly pid: number | undefined;
  readonly running: boolean;
  /** SIGTERM, then SIGKILL after 15 s. Idempotent. */
  stop(): Promise<void>;
  /** Starts it again after stop() or kill(): same databases, ports and config. */
  start(): Promise<void>;
  /** stop() then start(). */
  restart(): Promise<void>;
  /** Sends `signal` (default SIGKILL) and resolves when the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

function tail(file: string, chars = 3000): string {
  try {
    const text = readFileSync(file, 'utf8');
    return text.slice(-chars);
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts the production Temporal server on Postgres: creates its two databases if missing, sets up
 * or upgrades their schemas, writes the config and dynamic config into `stateDir`, starts the
 * server on loopback ports, waits for the frontend, and creates the namespace (with this project's
 * search attributes) if missing. The returned handle has the shape of startDevTemporal's.
 */
export async function startTemporalServer(opts: TemporalServerOptions): Promise<TemporalServer> {
  const binDir = await ensureTemporalServerBinaries();
  const target = opts.postgres ?? opts.databaseUrl;
  if (!target) throw new Error('startTemporalServer: give `postgres` (a URL or { host, port, user, password })');
  const pg = parsePostgresTarget(target);
  const prefix = opts.databasePrefix ?? 'temporal';
  const databases = { default: prefix, visibility: `${prefix}_visibility` };
  const namespace = opts.namespace ?? 'default';
  const stateDir = resolve(opts.stateDir ?? opts.dir ?? mkdtempSync(join(tmpdir(), 'temporal-server-')));
  const configDir = join(stateDir, 'config');
  mkdirSync(configDir, { recursive: true });
  const logFile = join(stateDir, 'temporal-server.log');
  const dynamicConfigFile = join(stateDir, 'dynamicconfig.yaml');

  await ensureDatabases(pg, [databases.default, databases.visibility]);
  await setupSchemas(binDir, pg, databases);

  const ports = await reusePorts(join(stateDir, 'ports.json'), opts.port);
  writeFileSync(
    dynamicConfigFile,
    dynamicConfigYaml({ ...SERVER_DYNAMIC_CONFIG, ...parseDynamicConfig(opts.dynamicConfig) }),
  );
  writeFileSync(
    join(configDir, 'development.yaml'),
    serverConfigYaml({
      pg,
      databases,
      ports,
      numHistoryShards: opts.numHistoryShards ?? 4,
      logLevel: opts.logLevel ?? 'warn',
      logFile,
      dynamicConfigFile,
      tls: opts.tls,
    }),
  );
  const address = `127.0.0.1:${ports.frontend}`;
  const admin = adminConnection(address, opts.tls);
  const timeout = opts.startTimeoutMs ?? 90_000;

  let child: ChildProcess | undefined;
  let stderr = '';

  const spawnServer = async () => {
    stderr = '';
    await forgetMembers(pg, databases.default);
    const fd = openSync(logFile, 'a');
    try {
      child = spawn(
        join(binDir, 'temporal-server'),
        ['--root', stateDir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'],
        { stdio: ['ignore', fd, 'pipe'], cwd: stateDir },
      );
    } finally {
      closeSync(fd);
    }
    const started = child;
    started.stderr?.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
    try {
      await waitUntilReady(admin, namespace, started, timeout, () => `${stderr}\n${tail(logFile)}`);
    } catch (err) {
      await stopChild(started, 'SIGKILL');
      throw err;
    }
  };

  const handle: TemporalServer = {
    address,
    stateDir,
    logFile,
    databases,
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    get running() {
      return !!child && child.exitCode === null && child.signalCode === null;
    },
    stop: async () => {
      if (child) await stopChild(child, 'SIGTERM');
    },
    start: async () => {
      if (handle.running) return;
      await spawnServer();
    },
    restart: async () => {
      await handle.stop();
      await spawnServer();
    },
    kill: async (signal = 'SIGKILL') => {
      if (child) await stopChild(child, signal);
    },
  };
  await spawnServer();
  return handle;
}

/** How this module talks to the server it started: in plaintext, or over mTLS with the frontend's own certificate. */
function adminConnection(address: string, tls: FrontendTlsFiles | undefined): TemporalConnectionOptions {
  if (!tls) return { address };
  const cert = readFileSync(tls.certFile);
  return {
    address,
    tls: {
      serverNameOverride: 'localhost',
      serverRootCACertificate: readFileSync(tls.caFile),
      clientCertPair: { crt: cert, key: readFileSync(tls.keyFile) },
    },
  };
}

/**
 * Waits until the frontend answers, then makes sure the namespace exists and carries the custom
 * search attributes, then that the history service answers for it (cheap reads through it).
 */
async function waitUntilReady(
  target: TemporalConnectionOptions,
  namespace: string,
  child: ChildProcess,
  timeout: number,
  diagnostics: () => string,
): Promise<void> {
  const { address } = target;
  const deadline = Date.now() + timeout;
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  let lastError: unknown;
  for (;;) {
    if (exited()) throw new Error(`temporal-server exited (${child.exitCode ?? child.signalCode}):\n${diagnostics()}`);
    if (Date.now() > deadline)
      throw new Error(
        `temporal-server not ready at ${address} within ${timeout} ms: ${String(lastError)}\n${diagnostics()}`,
      );
    let connection: Connection | undefined;
    try {
      const conn = await Connection.connect({ ...target, connectTimeout: 1000 });
      connection = conn;
      await conn.healthService.check({});
      const ws = conn.workflowService;
      try {
        await ws.describeNamespace({ namespace });
      } catch (err) {
        if ((err as { code?: number }).code !== 5 /* NOT_FOUND */) throw err;
        await ws.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') }).catch((e) => {
          if ((e as { code?: number }).code !== 6 /* ALREADY_EXISTS */) throw e;
        });
        await ws.describeNamespace({ namespace });
      }
      await registerSearchAttributes(conn, namespace);
      const listed = await conn.operatorService.listSearchAttributes({ namespace });
      const missing = CUSTOM_SEARCH_ATTRIBUTES.filter((k) => !(k.name in (listed.customAttributes ?? {})));
      if (missing.length)
        throw new Error(`search attributes not registered yet: ${missing.map((k) => k.name).join(', ')}`);
      // Reads through history for ids spread over the shards: NOT_FOUND means history and its
      // namespace cache answer; a probe that errs or times out is retried.
      const probes = await Promise.allSettled(
        Array.from({ length: 32 }, (_, i) =>
          conn.withDeadline(Date.now() + 3000, () =>
            ws.describeWorkflowExecution({
              namespace,
              execution: { workflowId: `__wholesale_readiness_probe_${i}__` },
            }),
          ),
        ),
      );
      const failed = probes.find(
        (p) => p.status === 'rejected' && (p.reason as { code?: number }).code !== 5 /* NOT_FOUND */,
      );
      if (failed) throw (failed as PromiseRejectedResult).reason;
      return;
    } catch (err) {
      lastError = err;
      await sleep(500);
    } finally {
      await connection?.close().catch(() => undefined);
    }
  }
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveStop) => {
    const timer = signal === 'SIGKILL' ? undefined : setTimeout(() => child.kill('SIGKILL'), 15_000);
    // 'close': the process has exited and its output pipes are closed, so nothing of it is left.
    child.once('close', () => {
      if (timer) clearTimeout(timer);
      resolveStop();
    });
    child.kill(signal);
  });
}
