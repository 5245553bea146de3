// The production Temporal server (`temporal-server`, SQL persistence on Postgres) as a child
// process: what production runs, instead of the dev server's SQLite. Used by `npm start` with
// DEV_TEMPORAL=server, by test/api/temporal-server.test.ts and by the topology harness.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Client as PgClient } from 'pg';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { freeLoopbackPort } from '../temporal/runtime';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../temporal/search-attributes';
import { registerSearchAttributes, type DevTemporal } from './temporal';

const projectRoot = resolve(__dirname, '..', '..');

/** The server version the binaries are built from (scripts/ensure-temporal-server.mjs). */
export const TEMPORAL_SERVER_VERSION = '1.29.1';

export interface PostgresTarget {
  host: string;
  port: number;
  user: string;
  password?: string;
  /** The database to connect to for `create database` (default `postgres`). */
  adminDatabase?: string;
}

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

/**
 * Builds (one time, a few minutes) or finds `temporal-server` and `temporal-sql-tool`; resolves to
 * their folder, or rejects with the reason. For a test's beforeAll (give it a long timeout).
 */
export function ensureTemporalServerBinaries(): Promise<string> {
  return new Promise((resolvePath, reject) => {
    const child = spawn(process.execPath, [resolve(projectRoot, 'scripts', 'ensure-temporal-server.mjs')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => {
      err = (err + String(d)).slice(-4000);
      if (process.env.TEMPORAL_SERVER_BUILD_LOG) process.stderr.write(d);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      const dir = out.trim();
      if (code === 0 && dir) resolvePath(dir);
      else reject(new Error(`temporal-server binaries unavailable (ensure-temporal-server exit ${code}): ${err.trim()}`));
    });
  });
}

export function parsePostgresTarget(target: PostgresTarget | string): PostgresTarget {
  if (typeof target !== 'string') return target;
  const url = new URL(target);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  return {
    host: url.hostname || '127.0.0.1',
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    password: url.password ? decodeURIComponent(url.password) : undefined,
    adminDatabase: database || 'postgres',
  };
}

/** The dynamic config this project needs from any Temporal server (docs/README "The production Temporal server"). */
export const SERVER_DYNAMIC_CONFIG: Record<string, unknown> = {
  // Order placement is update-with-start: updates plus multi-operation.
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
  'frontend.enableExecuteMultiOperation': true,
  // A search attribute registered at start is usable at once (tests, first start).
  'system.forceSearchAttributesCacheRefreshOnRead': true,
};

function parseDynamicConfig(extra: TemporalServerOptions['dynamicConfig']): Record<string, unknown> {
  if (!extra) return {};
  if (!Array.isArray(extra)) return extra;
  return Object.fromEntries(extra.map((entry) => {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new Error(`dynamic config "${entry}" is not name=value`);
    const raw = entry.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      /* a plain string */
    }
    return [entry.slice(0, eq), value];
  }));
}

/** Dynamic config YAML: every value JSON-encoded, which YAML reads as is. */
function dynamicConfigYaml(values: Record<string, unknown>): string {
  return Object.entries(values)
    .map(([name, value]) => `${name}:\n  - value: ${JSON.stringify(value)}\n    constraints: {}\n`)
    .join('');
}

interface Ports {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  frontendMembership: number;
  historyMembership: number;
  matchingMembership: number;
  workerMembership: number;
}

/** Whether 127.0.0.1:port can be bound right now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const srv = createServer();
    srv.once('error', () => resolveFree(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolveFree(true)));
  });
}

/**
 * Ports below 32768: the SQL store keeps each service's membership port in a SMALLINT column
 * (cluster_membership.rpc_port), so the kernel's ephemeral ports (32768 and up) make the server
 * die at start with "value is out of range for type smallint". Taken at random from 20000-32767.
 */
async function allocatePorts(frontend: number | undefined): Promise<Ports> {
  const taken = new Set<number>(frontend ? [frontend] : []);
  const next = async () => {
    for (;;) {
      const p = 20_000 + Math.floor(Math.random() * (32_767 - 20_000));
      if (!taken.has(p) && (await portFree(p))) {
        taken.add(p);
        return p;
      }
    }
  };
  return {
    frontend: frontend ?? (await freeLoopbackPort()),
    frontendHttp: await next(),
    history: await next(),
    matching: await next(),
    worker: await next(),
    frontendMembership: await next(),
    historyMembership: await next(),
    matchingMembership: await next(),
    workerMembership: await next(),
  };
}

/**
 * The ports of the last start from this state dir when they are all free again, else new ones
 * (saved for next time). A server started again after a crash on the same membership ports takes
 * over its old identity at once; on new ports it waits until the dead member's heartbeat expires
 * (about a minute of shards answering nothing).
 */
async function reusePorts(file: string, frontend: number | undefined): Promise<Ports> {
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Ports;
    const values = Object.values(saved);
    if ((frontend === undefined || saved.frontend === frontend)
      && values.length === 9 && values.every((p) => Number.isInteger(p))
      && (await Promise.all(values.map(portFree))).every(Boolean)) return saved;
  } catch {
    /* none saved yet */
  }
  const ports = await allocatePorts(frontend);
  writeFileSync(file, `${JSON.stringify(ports, null, 2)}\n`);
  return ports;
}

const q = (s: string) => JSON.stringify(s);

/** The static server config: loopback only, SQL persistence and SQL visibility, no pprof or metrics listener. */
function serverConfigYaml(o: {
  pg: PostgresTarget;
  databases: { default: string; visibility: string };
  ports: Ports;
  numHistoryShards: number;
  logLevel: string;
  logFile: string;
  dynamicConfigFile: string;
}): string {
  const sql = (database: string, maxConns: number) => `      sql:
        pluginName: "postgres12"
        databaseName: ${q(database)}
        connectAddr: ${q(`${o.pg.host}:${o.pg.port}`)}
        connectProtocol: "tcp"
        user: ${q(o.pg.user)}
        password: ${q(o.pg.password ?? '')}
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: "1h"
`;
  const service = (grpc: number, membership: number, http?: number) => `    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true
${http ? `      httpPort: ${http}\n` : ''}`;
  return `# Written by src/dev/temporal-server.ts; regenerated at every start.
log:
  stdout: false
  level: ${q(o.logLevel)}
  outputFile: ${q(o.logFile)}

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${o.numHistoryShards}
  datastores:
    postgres-default:
${sql(o.databases.default, 20)}    postgres-visibility:
${sql(o.databases.visibility, 10)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"

services:
  frontend:
${service(o.ports.frontend, o.ports.frontendMembership, o.ports.frontendHttp)}  history:
${service(o.ports.history, o.ports.historyMembership)}  matching:
${service(o.ports.matching, o.ports.matchingMembership)}  worker:
${service(o.ports.worker, o.ports.workerMembership)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: ${q(`127.0.0.1:${o.ports.frontend}`)}

dcRedirectionPolicy:
  policy: "noop"

archival:
  history:
    state: "disabled"
  visibility:
    state: "disabled"

namespaceDefaults:
  archival:
    history:
      state: "disabled"
    visibility:
      state: "disabled"

dynamicConfigClient:
  filepath: ${q(o.dynamicConfigFile)}
  pollInterval: "10s"
`;
}

async function ensureDatabases(pg: PostgresTarget, names: string[]): Promise<void> {
  const client = new PgClient({
    host: pg.host, port: pg.port, user: pg.user, password: pg.password, database: pg.adminDatabase ?? 'postgres',
  });
  await client.connect();
  try {
    for (const name of names) {
      const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
      if (exists.rowCount === 0) {
        try {
          await client.query(`create database "${name.replace(/"/g, '""')}"`);
        } catch (err) {
          // Another process created it meanwhile.
          if ((err as { code?: string }).code !== '42P04') throw err;
        }
      }
    }
  } finally {
    await client.end();
  }
}

/**
 * Forgets the cluster members recorded in the database. This server is a single process and owns
 * its databases, and its process has exited when this runs: a member left there by a SIGKILL
 * would otherwise keep its history shards and task queues (requests to them hang) until its
 * heartbeat expires, about a minute later.
 */
async function forgetMembers(pg: PostgresTarget, database: string): Promise<void> {
  const client = new PgClient({ host: pg.host, port: pg.port, user: pg.user, password: pg.password, database });
  await client.connect();
  try {
    await client.query('delete from cluster_membership');
  } finally {
    await client.end();
  }
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let output = '';
    const keep = (d: Buffer) => (output = (output + String(d)).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolveRun() : reject(new Error(`${bin} ${args.join(' ')} exited ${code}: ${output.trim()}`))));
  });
}

/** setup-schema (idempotent at version 0.0) and update-schema to the newest version, from the schema files embedded in the tool. */
async function setupSchemas(binDir: string, pg: PostgresTarget, databases: { default: string; visibility: string }): Promise<void> {
  const tool = join(binDir, 'temporal-sql-tool');
  // The password travels in the environment, not on the command line.
  const env = { ...process.env, SQL_PASSWORD: pg.password ?? '' };
  const base = ['--plugin', 'postgres12', '--ep', pg.host, '-p', String(pg.port), '-u', pg.user];
  for (const [database, schema] of [
    [databases.default, 'postgresql/v12/temporal'],
    [databases.visibility, 'postgresql/v12/visibility'],
  ] as const) {
    await run(tool, [...base, '--db', database, 'setup-schema', '-v', '0.0'], env);
    await run(tool, [...base, '--db', database, 'update-schema', '--schema-name', schema], env);
  }
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
  writeFileSync(dynamicConfigFile, dynamicConfigYaml({ ...SERVER_DYNAMIC_CONFIG, ...parseDynamicConfig(opts.dynamicConfig) }));
  writeFileSync(join(configDir, 'development.yaml'), serverConfigYaml({
    pg, databases, ports, numHistoryShards: opts.numHistoryShards ?? 4, logLevel: opts.logLevel ?? 'warn', logFile, dynamicConfigFile,
  }));
  const address = `127.0.0.1:${ports.frontend}`;
  const timeout = opts.startTimeoutMs ?? 90_000;

  let child: ChildProcess | undefined;
  let stderr = '';

  const spawnServer = async () => {
    stderr = '';
    await forgetMembers(pg, databases.default);
    const fd = openSync(logFile, 'a');
    try {
      child = spawn(join(binDir, 'temporal-server'),
        ['--root', stateDir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'],
        { stdio: ['ignore', fd, 'pipe'], cwd: stateDir });
    } finally {
      closeSync(fd);
    }
    const started = child;
    started.stderr?.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
    try {
      await waitUntilReady(address, namespace, started, timeout, () => `${stderr}\n${tail(logFile)}`);
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

/**
 * Waits until the frontend answers, then makes sure the namespace exists and carries the custom
 * search attributes, then that the history service answers for it (cheap reads through it).
 */
async function waitUntilReady(address: string, namespace: string, child: ChildProcess, timeout: number, diagnostics: () => string): Promise<void> {
  const deadline = Date.now() + timeout;
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  let lastError: unknown;
  for (;;) {
    if (exited()) throw new Error(`temporal-server exited (${child.exitCode ?? child.signalCode}):\n${diagnostics()}`);
    if (Date.now() > deadline) throw new Error(`temporal-server not ready at ${address} within ${timeout} ms: ${String(lastError)}\n${diagnostics()}`);
    let connection: Connection | undefined;
    try {
      const conn = await Connection.connect({ address, connectTimeout: 1000 });
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
      if (missing.length) throw new Error(`search attributes not registered yet: ${missing.map((k) => k.name).join(', ')}`);
      // Reads through history for ids spread over the shards: NOT_FOUND means history and its
      // namespace cache answer; a probe that errs or times out is retried.
      const probes = await Promise.allSettled(Array.from({ length: 32 }, (_, i) =>
        conn.withDeadline(Date.now() + 3000, () =>
          ws.describeWorkflowExecution({ namespace, execution: { workflowId: `__wholesale_readiness_probe_${i}__` } }))));
      const failed = probes.find((p) => p.status === 'rejected' && (p.reason as { code?: number }).code !== 5 /* NOT_FOUND */);
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
    child.once('exit', () => {
      if (timer) clearTimeout(timer);
      resolveStop();
    });
    child.kill(signal);
  });
}

/** True when the binaries are already built (no build attempted). */
export function temporalServerBinariesCached(): boolean {
  const dir = process.env.TEMPORAL_SERVER_BIN_DIR
    || join(process.env.XDG_CACHE_HOME || join(process.env.HOME ?? '', '.cache'), 'wholesale', `temporal-server-${TEMPORAL_SERVER_VERSION}`, 'bin');
  return existsSync(join(dir, 'temporal-server')) && existsSync(join(dir, 'temporal-sql-tool'));
}
