// bench/soak: the mixed-traffic soak with its invariant checker. Balance, intent
// (paid, paid late, left to expire) and gift-card orders, top-ups, redemptions, webhook receivers
// that answer 200/500/hang/redirect, racing and duplicate retries across API processes; then a
// drain and the checker's report (counts and every broken invariant). Exits 1 if any is broken.
// With the reconciler on (the soak's settings run it every 5 s), the checker also holds every
// order, top-up, redemption and webhook event to its deadline plus one reconcile period, sampled
// while the soak runs (injected faults and their recovery excused), and every delivery to
// WEBHOOK_MAX_ATTEMPTS.
//
//   npm run bench:soak -- --minutes 10                  against `npm start`'s stack
//   npm run bench:soak -- --minutes 10 --topology       on the topology harness: its own Postgres,
//        [--apis 2] [--workers 2] [--temporal dev|server] [--kill-workers]   Temporal, N APIs, M workers
//        [--restart-temporal]                         and the Temporal server stopped for 8 s now and then
//
// Other flags: --seconds S, --seed N, --accounts N, --concurrency C, --max-ops N, --drain-seconds S.
// Against `npm start`, the soak reads the stack the way bench/orders does (DATABASE_URL or the
// embedded Postgres, TEMPORAL_ADDRESS or the dev server, the payload key under STATE_DIR, the API at
// PUBLIC_BASE_URL or BENCH_API_URL). Its workflows finish within the drain only if the stack runs
// with short windows, e.g. start it with the soak's settings:
//   env $(node --import tsx bench/soak.ts --print-env) npm start
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config';
import { readStateSecrets } from '../src/dev/state-secrets';
import { startTopology, type Topology } from '../test/topology/harness';
import { deadlineSettingsOf, prng, Soak, SOAK_SERVICE_ENV, soakTargetOf, type SoakTarget } from '../test/topology/soak';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string' },
    seconds: { type: 'string' },
    seed: { type: 'string' },
    accounts: { type: 'string', default: '12' },
    concurrency: { type: 'string', default: '6' },
    'max-ops': { type: 'string', default: '1000000' },
    'drain-seconds': { type: 'string', default: '180' },
    topology: { type: 'boolean', default: false },
    apis: { type: 'string', default: '2' },
    workers: { type: 'string', default: '2' },
    temporal: { type: 'string', default: 'dev' },
    'kill-workers': { type: 'boolean', default: false },
    'restart-temporal': { type: 'boolean', default: false },
    'print-env': { type: 'boolean', default: false },
  },
  allowPositionals: false,
});

async function main() {
  if (args['print-env']) {
    console.log(
      Object.entries(SOAK_SERVICE_ENV)
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
    );
    return;
  }
  const seconds = args.seconds ? Number(args.seconds) : Number(args.minutes ?? 1) * 60;
  const seed = args.seed ? Number(args.seed) : Math.floor(Math.random() * 2 ** 31);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  let topology: Topology | undefined;
  let target: SoakTarget;
  const faults: string[] = [];
  if (args.topology) {
    process.env.TEMPORAL_PAYLOAD_KEYS ??= `soak:${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')}`;
    console.log(`starting the topology: ${args.apis} API, ${args.workers} workers, Temporal ${args.temporal} ...`);
    topology = await startTopology({
      apis: Number(args.apis),
      workers: Number(args.workers),
      temporal: args.temporal as 'dev' | 'server',
      env: SOAK_SERVICE_ENV,
    });
    target = soakTargetOf(topology, process.env.TEMPORAL_PAYLOAD_KEYS);
  } else {
    const state = readStateSecrets(process.env.STATE_DIR || '.state');
    const config = loadConfig({ WEBHOOK_ALLOW_INSECURE_URLS: 'true', ...state, ...process.env });
    target = {
      apiUrls: (process.env.BENCH_API_URL ?? `${config.publicBaseUrl}/wholesale/v1`).split(','),
      databaseUrl:
        config.DATABASE_URL ?? `postgres://postgres:wholesale@127.0.0.1:${config.EMBEDDED_PG_PORT}/wholesale`,
      temporalAddress: config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`,
      namespace: config.TEMPORAL_NAMESPACE,
      payloadKeys: config.TEMPORAL_PAYLOAD_KEYS,
      paymentWindowSeconds: config.PAYMENT_WINDOW_SECONDS,
      lateWatchSeconds: config.LATE_PAYMENT_WATCH_SECONDS,
      webhookMaxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
      deadlines: deadlineSettingsOf(config),
    };
  }
  const drainSeconds = Number(args['drain-seconds']);
  // Every workflow can close within the drain only if payment windows and late watches are short.
  const strict = target.paymentWindowSeconds + target.lateWatchSeconds + 30 < drainSeconds;
  console.log(
    `soak: seed ${seed}, ${seconds} s, ${args.accounts} accounts, concurrency ${args.concurrency}, APIs ${target.apiUrls.join(' ')}`,
  );
  const soak = new Soak(target, {
    seed,
    durationMs: seconds * 1000,
    maxOps: Number(args['max-ops']),
    accounts: Number(args.accounts),
    concurrency: Number(args.concurrency),
    funding: '100000.00',
    log: (l) => console.log(l),
  });
  let exitCode = 1;
  try {
    await soak.setup();
    const traffic = soak.run();
    if (topology) await injectFaults(topology, soak, traffic, seed, faults);
    await traffic;
    console.log(`traffic done; draining (up to ${drainSeconds} s) ...`);
    const left = await soak.drain(drainSeconds * 1000);
    if (left.length) console.log(`still running after the drain: ${left.length} (${left.slice(0, 5).join(', ')} ...)`);
    const report = await soak.check({
      strict,
      faults: [...faults, ...(topology?.crashes() ?? []).map((c) => `crash: ${c}`)],
    });
    console.log(`\n${report.text}`);
    if (topology) console.log(`\n${await backlogWaits(topology)}`);
    if (!strict)
      console.log(
        "\n(not strict: the stack's payment window and late watch are longer than the drain, so open workflows were not required to be closed)",
      );
    exitCode = report.violations.length ? 1 : 0;
  } finally {
    await soak.close();
    if (topology) {
      if (exitCode) console.log(topology.dumpLogs(30));
      await topology.teardown();
    }
  }
  process.exit(exitCode);
}

/**
 * How long tasks waited in a task queue before a worker took them, from each worker's SDK metrics
 * (schedule-to-start histograms): the count over the first bucket bound of 1 s or more. A worker
 * restarted during the soak counts from its restart.
 */
async function backlogWaits(topology: Topology): Promise<string> {
  const lines = ["task queue waits (schedule-to-start, from the workers' SDK metrics):"];
  for (const [kind, label] of [
    ['workflow_task', 'workflow tasks'],
    ['activity', 'activity tasks'],
  ]) {
    const buckets = new Map<number, number>();
    for (const w of topology.workers) {
      const text = await (await fetch(`${w.baseUrl}/metrics`)).text();
      const re = new RegExp(
        `^temporal_${kind}_schedule_to_start_latency(?:_seconds)?_bucket\\{[^}]*le="([^"]+)"[^}]*\\} ([0-9.eE+]+)$`,
        'gm',
      );
      for (const m of text.matchAll(re)) {
        const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
        buckets.set(le, (buckets.get(le) ?? 0) + Number(m[2]));
      }
    }
    const total = buckets.get(Infinity) ?? 0;
    const bound = [...buckets.keys()].filter((le) => le >= 1).sort((a, b) => a - b)[0];
    const over = bound === undefined || bound === Infinity ? 'n/a' : String(total - (buckets.get(bound) ?? 0));
    lines.push(`  ${label}: ${total}, of which waited over ${bound ?? '?'} s: ${over}`);
  }
  return lines.join('\n');
}

/** Until the traffic is done: workers SIGKILLed (--kill-workers) and Temporal stopped (--restart-temporal) at seeded moments. */
async function injectFaults(topology: Topology, soak: Soak, traffic: Promise<void>, seed: number, faults: string[]) {
  let done = false;
  const trafficDone = traffic.finally(() => (done = true));
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // The next fault, unless the traffic is done first.
  const until = (ms: number) => Promise.race([sleep(ms), trafficDone]);
  const kills = async () => {
    const rnd = prng(seed);
    while (args['kill-workers'] && !done) {
      await until(rnd.int(5_000, 30_000));
      if (done) break;
      const victim = rnd.pick(topology.workers);
      const recovered = soak.fault();
      await topology.kill(victim, 'SIGKILL');
      faults.push(`SIGKILL ${victim.name} at ${new Date().toISOString()}`);
      await topology.startProc(victim);
      recovered();
    }
  };
  const restarts = async () => {
    const rnd = prng(seed + 1);
    while (args['restart-temporal'] && !done) {
      await until(rnd.int(30_000, 90_000));
      if (done) break;
      const recovered = soak.fault();
      await topology.stopTemporal();
      faults.push(`Temporal stopped for 8 s at ${new Date().toISOString()}`);
      try {
        await sleep(8_000);
      } finally {
        await topology.startTemporal();
        recovered();
      }
    }
  };
  await Promise.all([kills(), restarts()]);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
