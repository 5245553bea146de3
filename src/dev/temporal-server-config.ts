// The production Temporal server's configuration: where its Postgres is, its static config and
// dynamic config YAML, and the loopback ports it listens on (kept across restarts).
import { readFileSync, writeFileSync } from 'node:fs';
import { freeLowPort, portFree } from './ports';

export interface PostgresTarget {
  host: string;
  port: number;
  user: string;
  password?: string;
  /** The database to connect to for `create database` (default `postgres`). */
  adminDatabase?: string;
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

/** The dynamic config this project needs from any Temporal server (docs/operations.md, "The production Temporal server"). */
export const SERVER_DYNAMIC_CONFIG: Record<string, unknown> = {
  // Order placement is update-with-start: updates plus multi-operation.
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
  'frontend.enableExecuteMultiOperation': true,
  // A search attribute registered at start is usable at once (tests, first start).
  'system.forceSearchAttributesCacheRefreshOnRead': true,
};

export function parseDynamicConfig(extra: string[] | Record<string, unknown> | undefined): Record<string, unknown> {
  if (!extra) return {};
  if (!Array.isArray(extra)) return extra;
  return Object.fromEntries(
    extra.map((entry) => {
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
    }),
  );
}

/** Dynamic config YAML: every value JSON-encoded, which YAML reads as is. */
export function dynamicConfigYaml(values: Record<string, unknown>): string {
  return Object.entries(values)
    .map(([name, value]) => `${name}:\n  - value: ${JSON.stringify(value)}\n    constraints: {}\n`)
    .join('');
}

export interface Ports {
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

/**
 * Ports below 32768: the SQL store keeps each service's membership port in a SMALLINT column
 * (cluster_membership.rpc_port), so the kernel's ephemeral ports (32768 and up) make the server
 * die at start with "value is out of range for type smallint" (./ports).
 */
async function allocatePorts(frontend: number | undefined): Promise<Ports> {
  return {
    frontend: frontend ?? (await freeLowPort()),
    frontendHttp: await freeLowPort(),
    history: await freeLowPort(),
    matching: await freeLowPort(),
    worker: await freeLowPort(),
    frontendMembership: await freeLowPort(),
    historyMembership: await freeLowPort(),
    matchingMembership: await freeLowPort(),
    workerMembership: await freeLowPort(),
  };
}

/**
 * The ports of the last start from this state dir when they are all free again, else new ones
 * (saved for next time). A server started again after a crash on the same membership ports takes
 * over its old identity at once; on new ports it waits until the dead member's heartbeat expires
 * (about a minute of shards answering nothing).
 */
export async function reusePorts(file: string, frontend: number | undefined): Promise<Ports> {
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Ports;
    const values = Object.values(saved);
    if (
      (frontend === undefined || saved.frontend === frontend) &&
      values.length === 9 &&
      values.every((p) => Number.isInteger(p)) &&
      (await Promise.all(values.map(portFree))).every(Boolean)
    )
      return saved;
  } catch {
    /* none saved yet */
  }
  const ports = await allocatePorts(frontend);
  writeFileSync(file, `${JSON.stringify(ports, null, 2)}\n`);
  return ports;
}

const q = (s: string) => JSON.stringify(s);

/** PEM files for mTLS on the frontend (TemporalServerOptions.tls). */
export interface FrontendTlsFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

/**
 * The frontend serves TLS and accepts only clients whose certificate the CA signed. The server's
 * own system worker (schedules, namespace and batch jobs) calls that frontend too: it presents the
 * frontend's certificate as its client certificate and checks the frontend's against the same CA,
 * by the name `localhost`.
 */
function tlsYaml(t: FrontendTlsFiles): string {
  return `  tls:
    frontend:
      server:
        certFile: ${q(t.certFile)}
        keyFile: ${q(t.keyFile)}
        clientCaFiles: [${q(t.caFile)}]
        requireClientAuth: true
    systemWorker:
      certFile: ${q(t.certFile)}
      keyFile: ${q(t.keyFile)}
      client:
        serverName: "localhost"
        rootCaFiles: [${q(t.caFile)}]
`;
}

/** The static server config: loopback only, SQL persistence and SQL visibility, no pprof or metrics listener, mTLS on the frontend if asked. */
export function serverConfigYaml(o: {
  pg: PostgresTarget;
  databases: { default: string; visibility: string };
  ports: Ports;
  numHistoryShards: number;
  logLevel: string;
  logFile: string;
  dynamicConfigFile: string;
  tls?: FrontendTlsFiles;
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
${o.tls ? tlsYaml(o.tls) : ''}
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
