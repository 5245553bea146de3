// bench/reconcile: one reconciler pass at scale. It starts its own embedded Postgres
// (with pg_stat_statements) and Temporal dev server, seeds BENCH_RECONCILE_ORDERS orders (default
// 100000) with proportional top-ups, redemptions, events and deliveries, EVM checkouts and ledgers
// straight into Postgres with bulk SQL (nearly all final, a few orphans per lifecycle, a few pending
// rows whose workflows run, two ledgers that do not add up), then runs the reconciler's own
// activity, step after step, as its workflow would, against the real dev server (every describe is
// real). It prints the run's wall time, the rows examined, Postgres' load (pg_stat_statements and
// pg_stat_database before/after), the same of a second run (which must repair nothing, and reads
// each ledger from the checkpoint the first left), and the EXPLAIN (ANALYZE, BUFFERS) of each
// keyset query, flagging any sequential scan. Exits 1 if a query scans a table of more than
// 10 000 rows or the second run repairs anything.
//
//   npm run bench:reconcile                       100k orders
//   BENCH_RECONCILE_ORDERS=10000 npm run bench:reconcile
//
// RECONCILE_PAGE_SIZE and RECONCILE_GRACE_SECONDS are read from the environment as the worker reads them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';
import { Client as PgClient } from 'pg';
import { createReconcileActivities } from '../activities/reconcile-activities';
import { loadConfig, type Config } from '../src/config';
import { initOrm, migrate, type Orm } from '../src/db/orm';
import {
  ledgerChecks,
  openEvmCheckouts,
  openRedemptions,
  overdueDeliveries,
  pendingPayments,
  unfinishedProcurements,
} from '../src/db/reconcile-store';
import { freeLowPort } from '../src/dev/ports';
import { startEmbeddedPostgres } from '../src/dev/postgres';
import { startDevTemporal } from '../src/dev/temporal';
import { connectTemporal, type TemporalHandle } from '../src/temporal/client';
import { RECONCILE_CHECKS, type ReconcileCheck, type ReconcileStepResult } from '../src/contracts/reconcile-contract';
import { orderStarter } from '../src/temporal/starters';

const ORDERS = Number(process.env.BENCH_RECONCILE_ORDERS ?? 100_000);
const ACCOUNTS = Math.max(10, Math.round(ORDERS / 100));
const TOPUPS = Math.round(ORDERS / 10);
const REDEMPTIONS = Math.round(ORDERS / 20);
const CHECKOUTS = Math.round(ORDERS / 10);
/** Orphans per lifecycle: non-final rows whose workflow Temporal never had. */
const ORPHANS = Math.max(3, Math.round(ORDERS / 20_000));
/** Pending orders whose workflows run: described, and left alone. */
const LIVE = Math.max(10, Math.round(ORDERS / 1000));

const fmt = (n: number) => n.toLocaleString('en-US');
const ms = (n: number) => `${n.toFixed(1)} ms`;

/**
 * Every table the reconciler reads, in bulk. Orders are `purchase` (80% balance-paid codes, 10%
 * intent paid, 5% intent expired, 5% balance-paid direct-code gift cards, delivered) and `topup`
 * (75% credited, the rest expired); one event per order and top-up, with a delivered webhook for
 * half the accounts; one redemption per 20 orders; one EVM checkout per 10, closed. The ledgers
 * add up, each a funding row then one row per balance debit and top-up credit, in id order.
 */
async function seed(em: EntityManager, grace: number): Promise<void> {
  const old = `now() - make_interval(secs => ${grace * 60})`;
  await em.execute(
    `insert into accounts (id, name, balance) select md5('bench-acct-' || a)::uuid, 'bench-' || a, 0 from generate_series(1, ?) a`,
    [ACCOUNTS],
  );
  const acct = (g: string) => `md5('bench-acct-' || (${g} % ${ACCOUNTS} + 1))::uuid`;
  await em.execute(
    `insert into orders (id, account_id, kind, channel, source, external_order_id, product_id, qty, unit_price, amount, currency, payment, status,
                         delivery_type, fulfillment_status, fulfilled_quantity, created_at, updated_at, paid_at, delivered_at, expires_at)
     select 'ord_bench_' || lpad(g::text, 8, '0'), ${acct('g')}, 'purchase', 'wholesale_api', 'rest', 'ext-' || g,
            case when g % 100 >= 95 then 'prod_apple_gift_card_us_10' else 'prod_chatgpt_plus_1m' end, 1, 1.00, 1.00, 'USDT',
            case when g % 100 between 80 and 94 then 'intent' else 'balance' end,
            case when g % 100 between 90 and 94 then 'expired' else 'delivered' end,
            case when g % 100 >= 95 then 'direct_code' else 'redemption' end,
            case when g % 100 >= 95 then 'delivered' end, case when g % 100 >= 95 then 1 else 0 end,
            now() - interval '2 days', now() - interval '2 days',
            case when g % 100 between 90 and 94 then null else now() - interval '2 days' end,
            case when g % 100 between 90 and 94 then null else now() - interval '2 days' end,
            case when g % 100 between 80 and 94 then now() - interval '2 days' end
       from generate_series(1, ?) g`,
    [ORDERS],
  );
  await em.execute(
    `insert into orders (id, account_id, kind, channel, source, external_topup_id, qty, unit_price, amount, currency, payment, status, created_at, updated_at, paid_at, expires_at)
     select 'top_bench_' || lpad(g::text, 8, '0'), ${acct('g')}, 'topup', 'wholesale_api', 'rest', 'tx-' || g, 1, 10.00, 10.00, 'USDT', 'intent',
            case when g % 4 = 0 then 'expired' else 'delivered' end, now() - interval '2 days', now() - interval '2 days',
            case when g % 4 = 0 then null else now() - interval '2 days' end, now() - interval '2 days'
       from generate_series(1, ?) g`,
    [TOPUPS],
  );
  // The orphans, last changed well before the grace period: pending intent orders and top-ups past
  // their window, paid gift cards whose procurement never ran, and (below) a redemption, a delivery
  // and an EVM checkout each. And LIVE pending orders whose workflows are running.
  await em.execute(
    `insert into orders (id, account_id, kind, channel, source, external_order_id, external_topup_id, product_id, qty, unit_price, amount, currency, payment, status,
                         delivery_type, fulfillment_status, created_at, updated_at, paid_at, expires_at)
     select 'ord_orphan_' || kind || '_' || g, ${acct('g')}, case when kind = 'topup' then 'topup' else 'purchase' end, 'wholesale_api', 'rest',
            case when kind <> 'topup' then 'orphan-' || kind || '-' || g end, case when kind = 'topup' then 'orphan-tx-' || g end,
            case when kind = 'gift' then 'prod_apple_gift_card_us_10' when kind = 'intent' or kind = 'live' then 'prod_chatgpt_plus_1m' end,
            1, 1.00, 1.00, 'USDT', case when kind = 'gift' then 'balance' else 'intent' end,
            case when kind = 'gift' then 'paid' else 'pending' end,
            case when kind = 'gift' then 'direct_code' when kind <> 'topup' then 'redemption' end, case when kind = 'gift' then 'processing' end,
            ${old}, ${old}, case when kind = 'gift' then ${old} end, case when kind <> 'gift' then ${old} end
       from unnest(array['intent', 'topup', 'gift']) kind, generate_series(1, ?) g
     union all
     select 'ord_live_' || g, ${acct('g')}, 'purchase', 'wholesale_api', 'rest', 'live-' || g, null, 'prod_chatgpt_plus_1m', 1, 1.00, 1.00, 'USDT', 'intent', 'pending',
            'redemption', null, ${old}, ${old}, null, now() + interval '1 hour'
       from generate_series(1, ?) g`,
    [ORPHANS, LIVE],
  );
  // Payments on record: every paid intent order's and credited top-up's confirmation, settled; and
  // the orphans of that kind, expired intent orders whose confirmed payment was never settled.
  await em.execute(
    `insert into orders (id, account_id, kind, channel, source, external_order_id, product_id, qty, unit_price, amount, currency, payment, status,
                         delivery_type, created_at, updated_at, expires_at)
     select 'ord_orphan_paid_' || g, ${acct('g')}, 'purchase', 'wholesale_api', 'rest', 'orphan-paid-' || g, 'prod_chatgpt_plus_1m',
            1, 1.00, 1.00, 'USDT', 'intent', 'expired', 'redemption', ${old}, ${old}, ${old}
       from generate_series(1, ?) g`,
    [ORPHANS],
  );
  await em.execute(
    `insert into payment_confirmations (checkout_id, order_id, source, confirmed_at, settled_at)
     select 'chk_paid_' || id, id, 'callback', coalesce(paid_at, ${old}), paid_at from orders
      where payment = 'intent' and (status = 'delivered' or id like 'ord_orphan_paid_%')`,
  );

  await em.execute(
    `insert into issued_codes (order_id, account_id, product_id, code, kind, is_test)
     select id, account_id, product_id, 'BENCH-' || id, 'redemption', false from orders
      where kind = 'purchase' and payment = 'balance' and delivery_type = 'redemption' and id like 'ord_bench_%' order by id limit ?`,
    [REDEMPTIONS],
  );
  await em.execute(
    `insert into redemptions (id, code_id, account_id, order_id, source, attempt, status, created_at, updated_at, fulfilled_at)
     select 'red_bench_' || lpad(row_number() over (order by c.id)::text, 8, '0'), c.id, c.account_id, c.order_id, 'api', 1,
            case when row_number() over (order by c.id) <= ? then 'processing' else 'fulfilled' end,
            ${old}, ${old}, case when row_number() over (order by c.id) > ? then ${old} end
       from issued_codes c`,
    [ORPHANS, ORPHANS],
  );

  await em.execute(
    `insert into events (id, account_id, type, payload, created_at, dispatched_at)
     select 'evt_' || id, account_id, case when status = 'expired' then 'order.expired' else 'order.delivered' end, '{}', updated_at, updated_at
       from orders where id like 'ord_bench_%' or id like 'top_bench_%'`,
  );
  await em.execute(
    `insert into webhook_deliveries (id, event_id, account_id, status, attempts, last_status_code, next_attempt_at, created_at, updated_at)
     select 'whd_' || e.id, e.id, e.account_id,
            case when row_number() over (order by e.id) <= ? then 'pending' else 'succeeded' end, 1, 200,
            case when row_number() over (order by e.id) <= ? then ${old} end, e.created_at, e.created_at
       from events e join accounts a on a.id = e.account_id where get_byte(decode(replace(a.id::text, '-', ''), 'hex'), 15) % 2 = 0`,
    [ORPHANS, ORPHANS],
  );

  // EVM checkouts of intent orders, closed; the orphan intent orders' still pending, their watch never started.
  await em.execute(
    `insert into evm_checkouts (id, reference, derivation_index, address, amount, currency, state, closed_at, created_at)
     select 'chk_bench_' || g, id, g, '0x' || lpad(to_hex(g), 40, '0'), 1.00, 'USDT',
            case when id like 'ord_orphan_%' then 'pending' else 'closed' end, case when id like 'ord_bench_%' then updated_at end, created_at
       from (select *, row_number() over (order by id) as g
               from ((select id, updated_at, created_at from orders where payment = 'intent' and id like 'ord_bench_%' order by id limit ?)
                     union all
                     (select id, updated_at, created_at from orders where id like 'ord_orphan_intent_%')) c) o`,
    [CHECKOUTS],
  );

  await em.execute(
    `insert into ledger_transactions (account_id, type, amount, balance_after, order_id, idempotency_key, created_at)
     select account_id, type, amount, sum(amount) over (partition by account_id order by seq), order_id, key, now() - interval '2 days'
       from (select id as account_id, 0::bigint as seq, 'adjust' as type, 1000.00::numeric as amount, null as order_id, 'bench:fund:' || id as key from accounts
             union all
             select account_id, order_number, 'purchase', -amount, id, 'bench:debit:' || id from orders where payment = 'balance' and status in ('delivered', 'paid')
             union all
             select account_id, order_number, 'topup', amount, id, 'bench:topup:' || id from orders where kind = 'topup' and status = 'delivered') x
      order by account_id, seq`,
  );
  await em.execute(
    `update accounts a set balance = l.total from (select account_id, sum(amount) as total from ledger_transactions group by account_id) l where l.account_id = a.id`,
  );
  // Two accounts whose balance does not match their ledger: alerted, never repaired.
  await em.execute(
    `update accounts set balance = balance + 0.01 where id in (select id from accounts order by id limit 2)`,
  );
  await em.execute('analyze');
}

/** The seeded row counts, by table. */
async function counts(em: EntityManager): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of [
    'accounts',
    'orders',
    'ledger_transactions',
    'redemptions',
    'events',
    'webhook_deliveries',
    'evm_checkouts',
    'payment_confirmations',
  ]) {
    const [row] = await em.execute<{ n: number }[]>(`select count(*)::int as n from ${t}`);
    out[t] = row.n;
  }
  return out;
}

interface CheckRun {
  check: ReconcileCheck;
  steps: number;
  checked: number;
  repaired: number;
  alerted: number;
  failed: number;
  ms: number;
}

/** One reconciliation: every check, page by page, through the reconciler's activity, as its workflow runs them. */
async function reconcileOnce(
  orm: Orm,
  temporal: TemporalHandle,
  config: Config,
  log: LogEntry[],
): Promise<{ ms: number; checks: CheckRun[] }> {
  const { reconcileStep } = createReconcileActivities({ orm, config, temporal });
  const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('WARN', (e) => log.push(e)) });
  const checks: CheckRun[] = [];
  const t0 = performance.now();
  for (const check of RECONCILE_CHECKS) {
    const run: CheckRun = { check, steps: 0, checked: 0, repaired: 0, alerted: 0, failed: 0, ms: 0 };
    const c0 = performance.now();
    let after: string | null = null;
    do {
      const step: ReconcileStepResult = await env.run(reconcileStep, { check, after });
      run.steps++;
      run.checked += step.checked;
      run.repaired += step.repaired;
      run.alerted += step.alerted;
      run.failed += step.failed;
      after = step.next;
    } while (after !== null);
    run.ms = performance.now() - c0;
    checks.push(run);
  }
  return { ms: performance.now() - t0, checks };
}

function printRun(title: string, run: { ms: number; checks: CheckRun[] }) {
  console.log(`\n${title}: ${ms(run.ms)} wall`);
  console.log('  check            steps   rows examined   repaired   alerted   failed        time');
  for (const c of run.checks) {
    console.log(
      `  ${c.check.padEnd(15)} ${String(c.steps).padStart(6)} ${fmt(c.checked).padStart(15)} ${String(c.repaired).padStart(10)} ${String(c.alerted).padStart(9)} ${String(c.failed).padStart(8)} ${ms(c.ms).padStart(11)}`,
    );
  }
  const sum = (k: 'steps' | 'checked' | 'repaired' | 'alerted' | 'failed') => run.checks.reduce((n, c) => n + c[k], 0);
  console.log(
    `  ${'total'.padEnd(15)} ${String(sum('steps')).padStart(6)} ${fmt(sum('checked')).padStart(15)} ${String(sum('repaired')).padStart(10)} ${String(sum('alerted')).padStart(9)} ${String(sum('failed')).padStart(8)}`,
  );
}

const DB_COUNTERS = [
  'xact_commit',
  'tup_returned',
  'tup_fetched',
  'tup_inserted',
  'tup_updated',
  'blks_hit',
  'blks_read',
] as const;

async function dbCounters(c: PgClient): Promise<Record<string, number>> {
  await c.query('select pg_stat_clear_snapshot()');
  const { rows } = await c.query(
    `select ${DB_COUNTERS.join(', ')} from pg_stat_database where datname = current_database()`,
  );
  return Object.fromEntries(DB_COUNTERS.map((k) => [k, Number(rows[0][k])]));
}

/** The reconciler's statements (pg_stat_statements since the reset), heaviest first. */
async function statements(c: PgClient) {
  const { rows } = await c.query(
    `select calls, rows, total_exec_time as total_ms, mean_exec_time as mean_ms, shared_blks_hit + shared_blks_read as blocks,
            regexp_replace(query, '\\s+', ' ', 'g') as query
       from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query !~* 'pg_stat|explain|pg_database|^(begin|commit|rollback|set |show |select \\$1)'
      order by total_exec_time desc`,
  );
  return rows as { calls: string; rows: string; total_ms: number; mean_ms: number; blocks: string; query: string }[];
}

interface MeasuredRun {
  run: Awaited<ReturnType<typeof reconcileOnce>>;
  log: LogEntry[];
  counters: Record<string, number>;
  stmts: Awaited<ReturnType<typeof statements>>;
}

/**
 * One reconciliation with Postgres' counters before and after, read on a connection of their own;
 * the run's pool is its own and is closed after it, so that its backends flush their statistics.
 */
async function measuredRun(url: string, temporal: TemporalHandle, config: Config): Promise<MeasuredRun> {
  const stats = new PgClient({ connectionString: url });
  await stats.connect();
  try {
    await stats.query('select pg_stat_statements_reset()');
    const orm = await initOrm(url, {}, { quietMigrations: true });
    const before = await dbCounters(stats);
    const log: LogEntry[] = [];
    let run: MeasuredRun['run'];
    try {
      run = await reconcileOnce(orm, temporal, config, log);
    } finally {
      await orm.close();
    }
    const after = await dbCounters(stats);
    const counters = Object.fromEntries(DB_COUNTERS.map((k) => [k, after[k] - before[k]]));
    return { run, log, counters, stmts: await statements(stats) };
  } finally {
    await stats.end();
  }
}

function printMeasuredRun(title: string, { run, log, counters, stmts }: MeasuredRun) {
  printRun(title, run);
  const describes = run.checks.filter((c) => c.check !== 'ledger').reduce((n, c) => n + c.checked, 0);
  console.log(
    `  Temporal describes: ${fmt(describes)}; log lines: ${log.filter((l) => l.level === 'WARN').length} warn (repairs), ${log.filter((l) => l.level === 'ERROR').length} error (ledger alerts)`,
  );
  console.log('\nPostgres load of that run (pg_stat_database, after - before):');
  console.log(`  ${DB_COUNTERS.map((k) => `${k} ${fmt(counters[k])}`).join(', ')}`);
  const total = stmts.reduce(
    (a, s) => ({
      calls: a.calls + Number(s.calls),
      ms: a.ms + s.total_ms,
      rows: a.rows + Number(s.rows),
      blocks: a.blocks + Number(s.blocks),
    }),
    { calls: 0, ms: 0, rows: 0, blocks: 0 },
  );
  console.log(
    `pg_stat_statements: ${fmt(total.calls)} statements, ${ms(total.ms)} executing, ${fmt(total.rows)} rows returned, ${fmt(total.blocks)} shared blocks touched`,
  );
  console.log('     calls        rows    total ms    mean ms    blocks  query');
  for (const s of stmts.slice(0, 10)) {
    console.log(
      `  ${fmt(Number(s.calls)).padStart(8)} ${fmt(Number(s.rows)).padStart(11)} ${s.total_ms.toFixed(1).padStart(11)} ${s.mean_ms.toFixed(3).padStart(10)} ${fmt(Number(s.blocks)).padStart(9)}  ${s.query.slice(0, 110)}`,
    );
  }
}

/** The SQL a reconciler read sends, captured instead of run, so EXPLAIN is given exactly that. */
async function sqlOf(read: (em: EntityManager) => Promise<unknown>): Promise<{ sql: string; params: unknown[] }> {
  let captured: { sql: string; params: unknown[] } | undefined;
  const recorder = {
    execute: async (sql: string, params: unknown[] = []) => ((captured = { sql, params }), []),
  } as unknown as EntityManager;
  await read(recorder);
  return captured!;
}

/** A sequential scan of a table this small is the planner's right choice, not a missing index. */
const SMALL_TABLE_ROWS = 10_000;

async function explainAll(
  orm: Orm,
  config: Config,
): Promise<{ name: string; seqScans: { table: string; rows: number }[] }[]> {
  const page = config.RECONCILE_PAGE_SIZE;
  const grace = config.RECONCILE_GRACE_SECONDS;
  const reads: [string, (em: EntityManager) => Promise<unknown>][] = [
    ['payments (pendingPayments)', (em) => pendingPayments(em, '', page, grace)],
    ['procurements (unfinishedProcurements)', (em) => unfinishedProcurements(em, '', page, grace)],
    ['redemptions (openRedemptions)', (em) => openRedemptions(em, '', page, grace)],
    ['deliveries (overdueDeliveries)', (em) => overdueDeliveries(em, '', page, grace)],
    ['evm_checkouts (openEvmCheckouts)', (em) => openEvmCheckouts(em, -1, page, grace)],
    [
      'ledger (ledgerChecks), one page of accounts, from their checkpoints',
      (em) => ledgerChecks(em, '00000000-0000-0000-0000-000000000000', page, config.RECONCILE_LEDGER_FULL_HOURS * 3600),
    ],
  ];
  const out: { name: string; seqScans: { table: string; rows: number }[] }[] = [];
  for (const [name, read] of reads) {
    const { sql, params } = await sqlOf(read);
    const plan = (
      await orm.em.fork().execute<{ 'QUERY PLAN': string }[]>(`explain (analyze, buffers) ${sql}`, params)
    ).map((r) => r['QUERY PLAN']);
    const seqScans: { table: string; rows: number }[] = [];
    for (const table of plan.map((l) => /Seq Scan on (\w+)/.exec(l)?.[1]).filter((t) => t !== undefined)) {
      const [row] = await orm.em.fork().execute<{ n: number }[]>('select count(*)::int as n from ' + table);
      seqScans.push({ table, rows: row.n });
    }
    console.log(
      `\n-- ${name}${seqScans.length ? `   SEQUENTIAL SCAN of ${seqScans.map((t) => `${t.table} (${fmt(t.rows)} rows)`).join(', ')}` : ''}`,
    );
    for (const line of plan) console.log(`   ${line}`);
    out.push({ name, seqScans });
  }
  return out;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'wholesale-bench-reconcile-'));
  console.log(`bench/reconcile: ${fmt(ORDERS)} orders; starting Postgres and the Temporal dev server under ${dir} ...`);
  const pg = await startEmbeddedPostgres({
    dataDir: join(dir, 'pg'),
    port: await freeLowPort(),
    settings: ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'],
  });
  const temporalServer = await startDevTemporal({ port: await freeLowPort(), uiPort: 0, namespace: 'default' });
  let orm: Orm | undefined;
  let temporal: TemporalHandle | undefined;
  let exitCode: number;
  try {
    const config = loadConfig({
      DATABASE_URL: pg.url,
      TEMPORAL_ADDRESS: temporalServer.address,
      TEMPORAL_TASK_QUEUE: 'bench-reconcile',
      LOG_LEVEL: 'silent',
      RECONCILE_PAGE_SIZE: process.env.RECONCILE_PAGE_SIZE,
      RECONCILE_GRACE_SECONDS: process.env.RECONCILE_GRACE_SECONDS,
    });
    // The EVM check runs only where PAYMENT_PROVIDER=evm; its reads and starts need nothing else of it.
    const reconcileConfig: Config = { ...config, PAYMENT_PROVIDER: 'evm' };
    orm = await initOrm(pg.url, {}, { quietMigrations: true });
    await migrate(orm);
    await orm.em.fork().execute('create extension if not exists pg_stat_statements');
    temporal = await connectTemporal({
      address: temporalServer.address,
      namespace: 'default',
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      payloadKeys: config.TEMPORAL_PAYLOAD_KEYS,
    });

    const s0 = performance.now();
    await seed(orm.em.fork(), config.RECONCILE_GRACE_SECONDS);
    const rows = await counts(orm.em.fork());
    // The live pending orders' workflows, started as a placement starts them (no worker: they wait, RUNNING).
    const live = await orm.em
      .fork()
      .execute<{ account_id: string; external_order_id: string }[]>(
        `select account_id, external_order_id from orders where id like 'ord_live_%'`,
      );
    for (let i = 0; i < live.length; i += 16) {
      await Promise.all(
        live
          .slice(i, i + 16)
          .map((o) =>
            orderStarter(temporal!, config, { accountId: o.account_id, externalOrderId: o.external_order_id }).start(),
          ),
      );
    }
    console.log(
      `seeded in ${ms(performance.now() - s0)}: ${Object.entries(rows)
        .map(([t, n]) => `${t} ${fmt(n)}`)
        .join(', ')}`,
    );
    console.log(
      `non-final: ${ORPHANS} orphans per lifecycle (no workflow), ${LIVE} pending orders with running workflows, 2 ledgers off by 0.01; page size ${config.RECONCILE_PAGE_SIZE}, grace ${config.RECONCILE_GRACE_SECONDS} s`,
    );

    const first = await measuredRun(pg.url, temporal, reconcileConfig);
    printMeasuredRun('one reconciliation (no ledger checkpoint yet: every ledger read from its first row)', first);
    const second = await measuredRun(pg.url, temporal, reconcileConfig);
    printMeasuredRun(
      'a second reconciliation right after (repairs nothing: each repair is claimed once; each ledger read from its checkpoint)',
      second,
    );
    const repairedAgain = second.run.checks.reduce((n, c) => n + c.repaired, 0);

    console.log('\nEXPLAIN (ANALYZE, BUFFERS) of each reconciler read, first page:');
    const plans = await explainAll(orm, reconcileConfig);
    const scans = plans.flatMap((p) => p.seqScans.map((t) => ({ ...t, read: p.name })));
    const large = scans.filter((t) => t.rows > SMALL_TABLE_ROWS);
    console.log(
      `\n${scans.length === 0 ? 'every reconciler read is on an index (no sequential scan)' : `sequential scans: ${scans.map((t) => `${t.table} (${fmt(t.rows)} rows) in ${t.read}`).join('; ')}`}`,
    );
    if (scans.length && !large.length)
      console.log(
        `(each of at most ${fmt(SMALL_TABLE_ROWS)} rows: the planner's choice for a table that small, not a missing index)`,
      );
    if (repairedAgain) console.log(`the second run repaired ${repairedAgain}: repairs are not idempotent`);
    exitCode = large.length || repairedAgain ? 1 : 0;
  } finally {
    await orm?.close().catch(() => undefined);
    await temporal?.connection.close().catch(() => undefined);
    await temporalServer.stop().catch(() => undefined);
    await pg.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(exitCode);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
