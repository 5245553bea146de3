import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../contracts/search-attributes';

export interface DevTemporal {
  address: string;
  uiUrl?: string;
  stop(): Promise<void>;
}

const projectRoot = resolve(__dirname, '..', '..');

/** Path of a `temporal` CLI, building it with Go if needed (scripts/ensure-temporal.mjs). */
export function ensureTemporalCli(): string | undefined {
  const result = spawnSync(process.execPath, [resolve(projectRoot, 'scripts', 'ensure-temporal.mjs')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const path = result.stdout.trim();
  return result.status === 0 && path ? path : undefined;
}

/**
 * The dev server's SQLite file in WAL mode with `synchronous=normal`: every workflow write is an
 * append, fsynced at checkpoints instead of on every commit. Measured here (bench/orders, empty
 * update-with-start): about twice the throughput of SQLite's defaults. A machine crash can lose the
 * last moments of dev-server history, never corrupt it; production runs a real Temporal cluster.
 */
export const SQLITE_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'];

const DYNAMIC_CONFIG = [
  // Update-with-start (order placement) needs multi-operation on older dev servers.
  'frontend.enableExecuteMultiOperation=true',
  'frontend.enableUpdateWorkflowExecution=true',
  // The dev server has one history shard, and the server reads a shard's transfer queue at most
  // 20 times a second by default: every new run's first workflow task, which reaches matching
  // only through that queue, waited for the next read, up to 50 ms.
  'history.transferProcessorMaxPollRPS=1000',
];

/**
 * Starts `temporal server start-dev` (with its Web UI unless `uiPort` is 0), registering the
 * custom search attributes; falls back to the SDK's own download when no CLI can be had.
 */
export async function startDevTemporal(opts: {
  port: number;
  uiPort: number;
  dbFilename?: string;
  namespace: string;
  /** More `name=value` dynamic config (tests use it to make the server suggest continue-as-new early). */
  dynamicConfig?: string[];
  /** The Web UI decodes payloads through this codec server. */
  codecEndpoint?: string;
}): Promise<DevTemporal> {
  const address = `127.0.0.1:${opts.port}`;
  const cli = ensureTemporalCli();
  const searchAttributeArgs = CUSTOM_SEARCH_ATTRIBUTES.flatMap((k) => ['--search-attribute', `${k.name}=Keyword`]);
  const dynamicArgs = [...DYNAMIC_CONFIG, ...(opts.dynamicConfig ?? [])].flatMap((v) => ['--dynamic-config-value', v]);
  if (!cli) {
    const uiArgs = opts.uiPort > 0 && opts.codecEndpoint ? ['--ui-codec-endpoint', opts.codecEndpoint] : [];
    return startWithSdkDownload(opts, [...searchAttributeArgs, ...dynamicArgs, ...uiArgs]);
  }

  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--namespace',
    opts.namespace,
    '--log-level',
    'error',
    ...searchAttributeArgs,
    ...dynamicArgs,
  ];
  if (opts.uiPort > 0) {
    args.push('--ui-port', String(opts.uiPort), '--ui-ip', '127.0.0.1');
    if (opts.codecEndpoint) args.push('--ui-codec-endpoint', opts.codecEndpoint);
  } else {
    args.push('--headless');
  }
  if (opts.dbFilename) {
    mkdirSync(dirname(resolve(opts.dbFilename)), { recursive: true });
    args.push('--db-filename', resolve(opts.dbFilename), ...SQLITE_PRAGMAS.flatMap((p) => ['--sqlite-pragma', p]));
  }
  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr = (stderr + String(d)).slice(-4000);
  });
  await waitForServer(address, child, () => stderr);
  return {
    address,
    uiUrl: opts.uiPort > 0 ? `http://127.0.0.1:${opts.uiPort}` : undefined,
    stop: () => stopChild(child),
  };
}

async function startWithSdkDownload(
  opts: { port: number; uiPort: number; dbFilename?: string; namespace: string },
  extraArgs: string[],
): Promise<DevTemporal> {
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: '127.0.0.1',
      port: opts.port,
      namespace: opts.namespace,
      dbFilename: opts.dbFilename ? resolve(opts.dbFilename) : undefined,
      uiPort: opts.uiPort > 0 ? opts.uiPort : undefined,
      extraArgs,
    },
  });
  return {
    address: env.address,
    uiUrl: opts.uiPort > 0 ? `http://127.0.0.1:${opts.uiPort}` : undefined,
    stop: () => env.teardown(),
  };
}

async function waitForServer(address: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let exited = false;
  child.once('exit', () => (exited = true));
  for (;;) {
    if (exited) throw new Error(`temporal dev server exited: ${stderr()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.healthService.check({});
      await connection.close();
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`temporal dev server not ready at ${address}: ${String(err)}`, { cause: err });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolveStop) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    // 'close': the process has exited and its output pipes are closed, so nothing of it is left.
    child.once('close', () => {
      clearTimeout(timer);
      resolveStop();
    });
    child.kill('SIGTERM');
  });
}

/** Registers the custom search attributes on a server we did not start (TEMPORAL_ADDRESS). */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const keyword = proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = CUSTOM_SEARCH_ATTRIBUTES.filter((k) => !(k.name in (existing.customAttributes ?? {})));
  if (missing.length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, keyword])),
    });
  } catch (err) {
    // Replicas starting together race to add them (SQL visibility refuses the loser): the loser
    // finds them added.
    const now = await connection.operatorService.listSearchAttributes({ namespace });
    if (CUSTOM_SEARCH_ATTRIBUTES.some((k) => !(k.name in (now.customAttributes ?? {})))) throw err;
  }
}
