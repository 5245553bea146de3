// bench/overload: the service past its peak. On the topology harness (its own Postgres, the
// production Temporal server by default, `npm run api` and `npm run worker` processes), it measures
// the peak order rate (balance orders of the test product, closed loop at --peak-concurrency)
// after a quiet spell of orders one at a time, then offers 1×, 2× and 4× that rate open loop
// (arrivals on a clock, whatever the answers) for --seconds each: several light accounts together
// send --light-share of the peak at every level, one heavy account sends the rest. Shed requests
// are not retried, so what is offered is what is measured. Per level it prints the admitted and
// shed rates, placement p50/p99 of admitted orders, the light and the heavy accounts' p99 and shed
// share, and how fast a shed request was answered, then the issue's goals against the 1× level.
//
//   node --import tsx bench/overload.ts [--temporal server|dev] [--apis 1] [--workers 1]
//        [--seconds 60] [--levels 1,2,4] [--light 4] [--light-share 0.2]
//        [--peak RATE | --peak-concurrency 16 --peak-seconds 20] [--settle-seconds 10] [--api-nice 0]
//        [--api-cpus LIST]
// --api-cpus (a taskset list, e.g. 0) runs the API processes and this client on those cores and
// everything else (Temporal, Postgres, the workers) on the others: the API on cores of its own, as
// in a deployment where it runs in pods of its own, on a machine that has only one pair of cores.
// ADMISSION_* and WORKER_HEARTBEAT_* set in the environment are passed to the service processes;
// DEV_TEMPORAL_DYNAMIC_CONFIG, as for `npm start`, to the Temporal server.
import { Agent, request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, setPriority } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config';
import { initOrm } from '../src/db/orm';
import { createAccount } from '../src/services/accounts/accounts';
import { adjustBalance } from '../src/services/payments/admin';
import { startTopology, type Topology } from '../test/topology/harness';
import { pct, procCpu } from './pool';

const { values: args } = parseArgs({
  options: {
    temporal: { type: 'string', default: 'server' },
    apis: { type: 'string', default: '1' },
    workers: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '60' },
    levels: { type: 'string', default: '1,2,4' },
    light: { type: 'string', default: '4' },
    'light-share': { type: 'string', default: '0.2' },
    peak: { type: 'string' },
    'peak-concurrency': { type: 'string', default: '16' },
    'peak-seconds': { type: 'string', default: '20' },
    'settle-seconds': { type: 'string', default: '10' },
    'api-nice': { type: 'string', default: '0' },
    'api-cpus': { type: 'string' },
  },
});

/** Every thread of `pid` (and what it starts later) on the cores `cpus` (a taskset list). */
function pinTo(pid: number, cpus: string): void {
  const r = spawnSync('taskset', ['--all-tasks', '--pid', '--cpu-list', cpus, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset ${cpus} ${pid}: ${r.stderr || r.error}`);
}

/** The cores not in a taskset list such as `0` or `0,2-3`. */
function otherCpus(list: string): string {
  const taken = new Set<number>();
  for (const part of list.split(',')) {
    const [from, to = from] = part.split('-').map(Number);
    for (let c = from; c <= to; c++) taken.add(c);
  }
  const rest = Array.from({ length: cpus().length }, (_, c) => c).filter((c) => !taken.has(c));
  if (rest.length === 0 || taken.size === 0) throw new Error(`--api-cpus ${list} leaves no cores for the rest`);
  return rest.join(',');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
/** The bench's own event-loop delay: a late client adds it to every answer time it measures. */
const clientLoop = monitorEventLoopDelay({ resolution: 10 });
clientLoop.enable();
const runId = randomBytes(3).toString('hex');

interface Answer {
  stream: 'heavy' | 'light';
  status: number;
  ms: number;
  /** `details.reason` of a 503 (limit, account_share, no_worker), if any. */
  reason?: string;
  /** When it was sent, in ms since its level began (offered levels only). */
  sentAt?: number;
}

/** One balance order of the test product; the answer's status, time and shed reason. */
function order(apiUrl: string, key: string, externalOrderId: string): Promise<Omit<Answer, 'stream'>> {
  const body = JSON.stringify({ externalOrderId, productId: 'prod_api_order_test', qty: 1 });
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(
      `${apiUrl}/orders`,
      {
        method: 'POST',
        agent,
        timeout: 60_000,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let reason: string | undefined;
          if (res.statusCode === 503) {
            try {
              reason = JSON.parse(text).details?.reason ?? 'deadline';
            } catch {
              reason = 'unparsed';
            }
          }
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, reason });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t0 }));
    req.end(body);
  });
}

interface Account {
  accountId: string;
  apiKey: string;
}

async function fundedAccounts(databaseUrl: string, n: number): Promise<Account[]> {
  const orm = await initOrm(databaseUrl);
  try {
    const thresholds = loadConfig({}).LEVEL_THRESHOLDS;
    const accounts: Account[] = [];
    for (let i = 0; i < n; i++) {
      const em = orm.em.fork();
      const a = await createAccount(em, `overload-${runId}-${i}`);
      await adjustBalance(em, {
        accountId: a.accountId,
        amount: '1000000.00',
        note: 'overload bench funding',
        levelThresholds: thresholds,
      });
      accounts.push(a);
    }
    return accounts;
  } finally {
    await orm.close(true);
  }
}

let peakSeq = 0;
/** What a shed request's Retry-After asks (the service always says 1 s). */
const RETRY_AFTER_MS = 1000;

/**
 * Orders placed one after another by one client of `account` until `until`; `count.placed` counts
 * the placed. A refused client waits as Retry-After asks: with a limit below the concurrency
 * (ADMISSION_MAX_LIMIT), clients sending again at once would spend the cores on refusals.
 */
async function closedLoop(apiUrls: string[], account: Account, until: number, count: { placed: number }) {
  while (performance.now() < until) {
    const i = peakSeq++;
    const a = await order(apiUrls[i % apiUrls.length], account.apiKey, `peak-${runId}-${i}`);
    if (a.status === 200) count.placed++;
    else if (a.status === 503) await sleep(Math.min(RETRY_AFTER_MS, until - performance.now()));
  }
}

/**
 * Orders one at a time for `seconds`, as a live service answers between bursts: each API process
 * sees what a placement takes without a queue before it is loaded.
 */
async function quietSpell(apiUrls: string[], account: Account, seconds: number): Promise<void> {
  await closedLoop(apiUrls, account, performance.now() + seconds * 1000, { placed: 0 });
}

/** Orders placed per second by `concurrency` clients of one account for `seconds` (after a warm-up). */
async function measurePeak(apiUrls: string[], account: Account, concurrency: number, seconds: number): Promise<number> {
  const clients = (until: number, count: { placed: number }) =>
    Promise.all(Array.from({ length: concurrency }, () => closedLoop(apiUrls, account, until, count)));
  await clients(performance.now() + 5_000, { placed: 0 });
  const measured = { placed: 0 };
  const started = performance.now();
  await clients(started + seconds * 1000, measured);
  return measured.placed / ((performance.now() - started) / 1000);
}

/** `rate` orders per second of one account, on a clock, for `seconds`; resolves when every answer is in. */
async function offer(
  apiUrls: string[],
  stream: Answer['stream'],
  account: Account,
  rate: number,
  seconds: number,
  tag: string,
): Promise<Answer[]> {
  const answers: Promise<Answer>[] = [];
  const started = performance.now();
  for (let i = 0; ; i++) {
    const at = started + (i * 1000) / rate;
    if (at > started + seconds * 1000) break;
    const wait = at - performance.now();
    if (wait > 0) await sleep(wait);
    const sentAt = performance.now() - started;
    answers.push(
      order(apiUrls[i % apiUrls.length], account.apiKey, `${tag}-${i}`).then((a) => ({ ...a, stream, sentAt })),
    );
  }
  return Promise.all(answers);
}

interface LevelResult {
  level: number;
  offered: number;
  admittedRate: number;
  shedRate: number;
  byReason: Record<string, number>;
  admittedP50: number;
  admittedP99: number;
  lightP99: number;
  lightShed: number;
  heavyP99: number;
  heavyShed: number;
  shedP50: number;
  shedP99: number;
  failed: number;
  /** Each admitted order's answer time and when it was sent. */
  admittedTimes: { ms: number; sentAt: number }[];
  limit: string;
  loop: string;
  cores: string;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
/** A level's first seconds, reported apart: the limit it starts with was set under the level before. */
const FIRST_SECONDS = 5;

function summarize(
  level: number,
  offered: number,
  seconds: number,
  answers: Answer[],
  limit: string,
  loop: string,
  cores: string,
): LevelResult {
  const admitted = answers.filter((a) => a.status === 200);
  const shed = answers.filter(
    (a) => a.status === 503 && a.reason && a.reason !== 'deadline' && a.reason !== 'unparsed',
  );
  const of = (stream: Answer['stream']) => answers.filter((a) => a.stream === stream);
  const shedShare = (xs: Answer[]) => (xs.length ? xs.filter((a) => shed.includes(a)).length / xs.length : 0);
  const byReason: Record<string, number> = {};
  for (const a of shed) byReason[a.reason!] = (byReason[a.reason!] ?? 0) + 1;
  return {
    level,
    offered,
    admittedRate: admitted.length / seconds,
    shedRate: shed.length / seconds,
    byReason,
    admittedP50: pct(sorted(admitted.map((a) => a.ms)), 50) ?? NaN,
    admittedP99: pct(sorted(admitted.map((a) => a.ms)), 99) ?? NaN,
    lightP99:
      pct(
        sorted(
          of('light')
            .filter((a) => a.status === 200)
            .map((a) => a.ms),
        ),
        99,
      ) ?? NaN,
    lightShed: shedShare(of('light')),
    heavyP99:
      pct(
        sorted(
          of('heavy')
            .filter((a) => a.status === 200)
            .map((a) => a.ms),
        ),
        99,
      ) ?? NaN,
    heavyShed: shedShare(of('heavy')),
    shedP50: pct(sorted(shed.map((a) => a.ms)), 50) ?? NaN,
    shedP99: pct(sorted(shed.map((a) => a.ms)), 99) ?? NaN,
    failed: answers.length - admitted.length - shed.length,
    admittedTimes: admitted.map((a) => ({ ms: a.ms, sentAt: a.sentAt ?? 0 })),
    limit,
    loop,
    cores,
  };
}

/** Each API process's /metrics now (one scrape each), as metric name → value. */
async function apiMetrics(t: Topology): Promise<Map<string, number>[]> {
  return Promise.all(
    t.apis.map(async (p) => {
      const text = await fetch(`${p.baseUrl}/metrics`).then(
        (r) => r.text(),
        () => '',
      );
      const values = new Map<string, number>();
      for (const line of text.split('\n')) {
        const m = /^([a-zA-Z0-9_:]+)(?:\{[^}]*\})? (\S+)$/.exec(line);
        if (m && !values.has(m[1])) values.set(m[1], Number(m[2]));
      }
      return values;
    }),
  );
}

/**
 * The admission limit of each API process now (and, after a colon, the level it shares out among
 * accounts), and its event-loop delay p99 / max in ms since the
 * last scrape (prom-client resets that at every collect): how long a request that has arrived may
 * wait before the process runs it.
 */
async function apiState(t: Topology): Promise<{ limit: string; loop: string }> {
  const all = await apiMetrics(t);
  const ms = (v: number | undefined) => (v === undefined ? '?' : (v * 1000).toFixed(0));
  return {
    limit: all
      .map((m) => `${m.get('wholesale_admission_limit') ?? '?'}:${m.get('wholesale_admission_shown_limit') ?? '?'}`)
      .join('/'),
    loop: all
      .map(
        (m) =>
          `${ms(m.get('wholesale_nodejs_eventloop_lag_p99_seconds'))}/${ms(m.get('wholesale_nodejs_eventloop_lag_max_seconds'))}`,
      )
      .join(' '),
  };
}

/**
 * CPU seconds the whole machine has spent busy (every state but idle and iowait), from /proc/stat,
 * and of those the time the hypervisor gave its cores to another guest (steal): a level with much
 * steal ran on less than two cores.
 */
function machineCpu(): { busy: number; steal: number } {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  return { busy: (ticks.reduce((a, b) => a + b, 0) - ticks[3] - ticks[4]) / 100, steal: (ticks[7] ?? 0) / 100 };
}

/**
 * Where the cores go: CPU seconds so far of this bench, the API processes, the workers, and the
 * machine (the rest is the Temporal server, Postgres and the kernel's share of the traffic).
 */
function cpuNow(t: Topology) {
  const { user, system } = process.cpuUsage();
  const sum = (ps: Topology['apis']) => ps.reduce((a, p) => a + procCpu(p.child!.pid!), 0);
  return { bench: (user + system) / 1e6, api: sum(t.apis), worker: sum(t.workers), machine: machineCpu() };
}

/** Cores used over a level, as bench/API/worker/rest/stolen. */
function coresBetween(a: ReturnType<typeof cpuNow>, b: ReturnType<typeof cpuNow>, seconds: number): string {
  const c = (x: number) => (x / seconds).toFixed(2);
  const [bench, api, worker] = [b.bench - a.bench, b.api - a.api, b.worker - a.worker];
  const steal = b.machine.steal - a.machine.steal;
  return `${c(bench)}/${c(api)}/${c(worker)}/${c(b.machine.busy - a.machine.busy - steal - bench - api - worker)}/${c(steal)}`;
}

function print(results: LevelResult[], peak: number) {
  const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  console.log(`\nbench/overload  peak ${f(peak)} orders/s  (${new Date().toISOString()})\n`);
  console.log(
    'level  offered/s  admitted/s  shed/s  admitted p50/p99 ms  light p99 ms  light shed  heavy p99 ms  heavy shed  shed answer p50/p99 ms  other  limit  loop p99/max ms: API, bench  cores: bench/API/worker/rest/stolen  shed by reason',
  );
  for (const r of results) {
    console.log(
      `${`${r.level}x`.padEnd(5)}  ${f(r.offered).padStart(9)}  ${f(r.admittedRate).padStart(10)}  ${f(r.shedRate).padStart(6)}  ${`${f(r.admittedP50, 0)} / ${f(r.admittedP99, 0)}`.padStart(19)}  ${f(r.lightP99, 0).padStart(12)}  ${`${f(r.lightShed * 100)}%`.padStart(10)}  ${f(r.heavyP99, 0).padStart(12)}  ${`${f(r.heavyShed * 100)}%`.padStart(10)}  ${`${f(r.shedP50)} / ${f(r.shedP99)}`.padStart(22)}  ${String(r.failed).padStart(5)}  ${r.limit.padStart(5)}  ${r.loop.padStart(28)}  ${r.cores.padStart(35)}  ${JSON.stringify(r.byReason)}`,
    );
  }
  const base = results.find((r) => r.level === 1);
  if (!base) return;
  console.log('\ngoals (against the 1x level):');
  for (const r of results.filter((x) => x.level > 1)) {
    const bound = 2 * base.admittedP50;
    const over = r.admittedTimes.filter((a) => a.ms > bound);
    console.log(
      `  ${r.level}x: admitted ${f((r.admittedRate / peak) * 100, 0)}% of peak (>= 90%), admitted p99 ${f(r.admittedP99, 0)} ms vs 2x the 1x p50 ${f(bound, 0)} ms, ` +
        `shed answered p99 ${f(r.shedP99)} ms (<= 50), light p99 ${f(r.lightP99, 0)} ms vs 1.5x the 1x light p99 ${f(1.5 * base.lightP99, 0)} ms`,
    );
    // Where the admitted tail lies in time: the level's first seconds (the limit still set for the
    // level before) or all along.
    console.log(
      `      admitted over that bound: ${over.length} of ${r.admittedTimes.length} (${f((over.length / Math.max(1, r.admittedTimes.length)) * 100)}%), ` +
        `${over.filter((a) => a.sentAt < FIRST_SECONDS * 1000).length} of them sent in the first ${FIRST_SECONDS} s; ` +
        `admitted p99 after those seconds ${f(pct(sorted(r.admittedTimes.filter((a) => a.sentAt >= FIRST_SECONDS * 1000).map((a) => a.ms)), 99) ?? NaN, 0)} ms`,
    );
  }
}

async function main() {
  const levels = args.levels!.split(',').map(Number);
  const seconds = Number(args.seconds);
  const nLight = Number(args.light);
  const lightShare = Number(args['light-share']);
  process.env.TEMPORAL_PAYLOAD_KEYS ??= `overload:${randomBytes(32).toString('base64')}`;
  const passed = Object.fromEntries(
    Object.entries(process.env).filter(([k, v]) => /^(ADMISSION_|WORKER_HEARTBEAT_)/.test(k) && v !== undefined),
  ) as Record<string, string>;
  const temporalDynamicConfig = loadConfig().DEV_TEMPORAL_DYNAMIC_CONFIG;
  console.log(
    `starting the topology: ${args.apis} API, ${args.workers} workers, Temporal ${args.temporal} ${temporalDynamicConfig.join(' ')} ${JSON.stringify(passed)} ...`,
  );
  const apiCpus = args['api-cpus'];
  // Everything the topology starts inherits this process's cores; the API processes and this
  // client move to theirs once started.
  const restCpus = apiCpus ? otherCpus(apiCpus) : undefined;
  if (apiCpus) pinTo(process.pid, restCpus!);
  const t = await startTopology({
    apis: Number(args.apis),
    workers: Number(args.workers),
    temporal: args.temporal as 'dev' | 'server',
    env: { RATE_LIMIT_PER_MINUTE: '100000000', RECONCILE_SECONDS: '0', ...passed },
    temporalDynamicConfig,
  });
  try {
    const apiUrls = t.apis.map((p) => p.apiUrl);
    if (apiCpus) {
      for (const p of t.apis) pinTo(p.child!.pid!, apiCpus);
      pinTo(process.pid, apiCpus);
      console.log(`API processes and the client on cores ${apiCpus}, the rest on ${restCpus}`);
    }
    const apiNice = Number(args['api-nice']);
    if (apiNice !== 0) {
      // The API processes and this client ahead of the rest in the CPU's queue: what an API on
      // cores of its own sees, on a machine where one pair of cores runs the whole stack.
      for (const p of t.apis) setPriority(p.child!.pid!, apiNice);
      setPriority(apiNice);
    }
    const [heavy, ...light] = await fundedAccounts(t.databaseUrl, 1 + nLight);
    await quietSpell(apiUrls, heavy, 5);
    const peak = args.peak
      ? Number(args.peak)
      : await measurePeak(apiUrls, heavy, Number(args['peak-concurrency']), Number(args['peak-seconds']));
    console.log(`peak: ${peak.toFixed(1)} orders/s`);
    const results: LevelResult[] = [];
    for (const level of levels) {
      await sleep(Number(args['settle-seconds']) * 1000);
      const lightRate = (lightShare * peak) / nLight;
      const heavyRate = Math.max(0.1, level * peak - lightShare * peak);
      console.log(
        `${level}x: heavy ${heavyRate.toFixed(1)}/s, ${nLight} light at ${lightRate.toFixed(1)}/s each, ${seconds} s ...`,
      );
      await apiState(t);
      clientLoop.reset();
      const cpuBefore = cpuNow(t);
      const levelStarted = performance.now();
      const answers = (
        await Promise.all([
          offer(apiUrls, 'heavy', heavy, heavyRate, seconds, `h${level}-${runId}`),
          ...light.map((a, i) => offer(apiUrls, 'light', a, lightRate, seconds, `l${level}-${i}-${runId}`)),
        ])
      ).flat();
      const cores = coresBetween(cpuBefore, cpuNow(t), (performance.now() - levelStarted) / 1000);
      const api = await apiState(t);
      const client = `${(clientLoop.percentile(99) / 1e6).toFixed(0)}/${(clientLoop.max / 1e6).toFixed(0)}`;
      results.push(summarize(level, level * peak, seconds, answers, api.limit, `${api.loop} ${client}`, cores));
      print(results, peak);
    }
  } finally {
    agent.destroy();
    await t.teardown();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
