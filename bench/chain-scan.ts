// bench/chain-scan: what reading a chain costs with many open checkouts, per-checkout (each watch
// asking its own address, as before the chain scanner) against one scan per chain. It starts its
// own embedded Postgres, Temporal dev server and Hardhat chain (with a JSON-RPC proxy on loopback
// that counts every call), runs the service in this process (API and worker, PAYMENT_PROVIDER=evm),
// and for each size opens that many checkouts, 10% of them real top-ups through the API (the rest
// straight into Postgres: open, unpaid, their addresses in every scan), then:
// - after: the chain scanner as it runs, its RPC calls counted over whole ticks and given per minute;
//   then the 10% paid and confirmed at once, and the time from their confirmation to their credit;
// - before: one round of the per-checkout read the watches made every PAYMENT_SYNC_SECONDS (the
//   same code, for one checkout at a time, 100 at once as a worker's activity slots run them), its
//   calls per minute at that cadence and how long one round takes (a payment waits for its turn).
//
//   npm run bench:chain-scan                               1,000 and 5,000 checkouts
//   BENCH_CHAIN_SCAN_CHECKOUTS=200 npm run bench:chain-scan
//   PAYMENT_SYNC_SECONDS=10 (default) EVM_SCAN_ADDRESSES_PER_CALL=500 (default) EVM_WATCH_FALLBACK_SECONDS=60 (default)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startServices, type Services } from '../src/bootstrap';
import { loadConfig } from '../src/config';
import { evmChainScans, evmCheckoutAt } from '../src/db/evm-store';
import { startDevChain, type DevChain } from '../src/dev/evm-chain';
import { freeLowPort } from '../src/dev/ports';
import { startEmbeddedPostgres } from '../src/dev/postgres';
import { startDevTemporal } from '../src/dev/temporal';
import { createAccount } from '../src/services/accounts/accounts';
import { scanCheckout } from '../src/services/payments/evm-scan';
import { evmChainsEnv } from '../test/helpers/evm-chain';
import { startRpcProxy, type RpcProxy } from '../test/helpers/evm-proxy';

const SIZES = (process.env.BENCH_CHAIN_SCAN_CHECKOUTS ?? '1000,5000').split(',').map(Number);
const SYNC_SECONDS = Number(process.env.PAYMENT_SYNC_SECONDS ?? 10);
const PER_CALL = process.env.EVM_SCAN_ADDRESSES_PER_CALL ?? '500';
const FALLBACK_SECONDS = process.env.EVM_WATCH_FALLBACK_SECONDS ?? '60';
const CONFIRMATIONS = 2;
/** Ticks of the scanner whose calls are counted. */
const TICKS = 3;
/** Per-checkout reads at once in the "before" round: a worker's default activity slots. */
const BEFORE_CONCURRENCY = 100;
const METHODS = ['eth_blockNumber', 'eth_getLogs', 'eth_getBlockByNumber', 'eth_chainId', 'eth_call'];

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const units6 = (cents: number) => BigInt(cents) * 10_000n;
const percentile = (p: number, xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

interface Row {
  checkouts: number;
  mode: 'before' | 'after';
  callsPerMinute: number;
  getLogsPerRead: number;
  readSeconds: number;
  credit?: { p50: number; p95: number; max: number };
}

function callsOf(proxy: RpcProxy): Record<string, number> {
  return Object.fromEntries(METHODS.map((m) => [m, proxy.count(m)]));
}
const delta = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(METHODS.map((m) => [m, b[m] - a[m]]));
const total = (d: Record<string, number>) => Object.values(d).reduce((s, n) => s + n, 0);

async function tickTime(services: Services): Promise<number> {
  const [row] = await evmChainScans(services.orm.em.fork());
  return row ? new Date(row.scanned_at).getTime() : 0;
}

async function nextTick(services: Services): Promise<void> {
  const before = await tickTime(services);
  while ((await tickTime(services)) <= before) await sleep(100);
}

async function measure(
  size: number,
  ctx: { pgUrlFor: (db: string) => string; temporalAddress: string; chain: DevChain; proxy: RpcProxy },
): Promise<Row[]> {
  const db = `bench_chain_scan_${size}_${randomBytes(3).toString('hex')}`;
  const admin = await connectPg(ctx.pgUrlFor('postgres'));
  await admin.query(`create database "${db}"`);
  await admin.end();
  const port = await freeLowPort();
  const config = loadConfig({
    ...process.env,
    PORT: String(port),
    DATABASE_URL: ctx.pgUrlFor(db),
    TEMPORAL_ADDRESS: ctx.temporalAddress,
    TEMPORAL_TASK_QUEUE: `bench-chain-scan-${randomBytes(3).toString('hex')}`,
    LOG_LEVEL: 'silent',
    PAYMENT_PROVIDER: 'evm',
    EVM_CHAINS: evmChainsEnv(ctx.chain, { confirmations: CONFIRMATIONS, rpcUrls: [ctx.proxy.url] }),
    EVM_SCAN_ADDRESSES_PER_CALL: PER_CALL,
    EVM_WATCH_FALLBACK_SECONDS: FALLBACK_SECONDS,
    PAYMENT_SYNC_SECONDS: String(SYNC_SECONDS),
    PAYMENT_WINDOW_SECONDS: '3600',
    // One account opens all the top-ups: the reseller limits stay out of the way.
    RATE_LIMIT_PER_MINUTE: '1000000',
    TOPUP_RATE_LIMIT_PER_HOUR: '1000000',
    MAX_PENDING_TOPUPS: '1000000',
    RECONCILE_SECONDS: '0',
  });
  const services = await startServices({
    config,
    databaseUrl: config.DATABASE_URL!,
    temporalAddress: ctx.temporalAddress,
    registerSearchAttributes: true,
    logger: pino({ level: 'silent' }),
    api: true,
    worker: true,
  });
  const rows: Row[] = [];
  try {
    const { apiKey, accountId } = await createAccount(services.orm.em.fork(), `bench-${size}`);
    const paid = Math.max(1, Math.round(size / 10));
    process.stdout.write(`  ${fmt(size)} checkouts: opening ${fmt(paid)} top-ups through the API ...`);
    const topups: { orderId: string; cents: number }[] = [];
    for (let i = 0; i < paid; i += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, paid - i) }, async (_, j) => {
          const cents = 100 + ((i + j) % 900);
          const res = await fetch(`http://127.0.0.1:${port}/wholesale/v1/topup`, {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              externalTopupId: `bench-${i + j}`,
              amount: (cents / 100).toFixed(2),
              currency: 'USDT',
            }),
          });
          if (res.status !== 200) throw new Error(`POST /topup answered ${res.status}: ${await res.text()}`);
          topups.push({ orderId: ((await res.json()) as { orderId: string }).orderId, cents });
        }),
      );
    }
    await services.orm.em.fork().execute(
      `insert into evm_checkouts (id, reference, derivation_index, address, amount, currency)
         select 'chk_filler_' || i, 'ord_filler_' || i, nextval('evm_derivation_index_seq'), '0xee' || lpad(to_hex(i), 38, '0'), '1.00', 'USDT'
           from generate_series(1, ?) as i`,
      [size - paid],
    );
    console.log(' done');

    // After: whole ticks of the scanner, every open checkout in each.
    await nextTick(services);
    await nextTick(services);
    let calls = callsOf(ctx.proxy);
    let started = Date.now();
    for (let i = 0; i < TICKS; i++) await nextTick(services);
    let d = delta(calls, callsOf(ctx.proxy));
    const afterRow: Row = {
      checkouts: size,
      mode: 'after',
      callsPerMinute: (total(d) / ((Date.now() - started) / 1000)) * 60,
      getLogsPerRead: d.eth_getLogs / TICKS,
      readSeconds: (Date.now() - started) / 1000 / TICKS,
    };
    const [scan] = await evmChainScans(services.orm.em.fork());
    if (scan.checkouts !== size) throw new Error(`the scanner read for ${scan.checkouts} checkouts, not ${size}`);

    // The 10% paid, then confirmed at once: the time from that moment to each credit.
    const addresses = await services.orm.em
      .fork()
      .execute<{ reference: string; address: `0x${string}` }[]>(
        `select reference, address from evm_checkouts where reference = any(?::text[])`,
        [`{${topups.map((t) => t.orderId).join(',')}}`],
      );
    const byOrder = new Map(addresses.map((a) => [a.reference, a.address]));
    for (const t of topups) await ctx.chain.pay(byOrder.get(t.orderId)!, 'USDT', units6(t.cents));
    await ctx.chain.mine(CONFIRMATIONS);
    const confirmedAt = Date.now();
    const credited = new Map<string, number>();
    const deadline = confirmedAt + 10 * 60_000;
    while (credited.size < topups.length && Date.now() < deadline) {
      const rows = await services.orm.em
        .fork()
        .execute<{ order_id: string }[]>(
          `select order_id from ledger_transactions where account_id = ? and type = 'topup'`,
          [accountId],
        );
      const now = Date.now();
      for (const r of rows) if (!credited.has(r.order_id)) credited.set(r.order_id, now - confirmedAt);
      await sleep(100);
    }
    if (credited.size < topups.length)
      throw new Error(`${topups.length - credited.size} payments not credited within 10 minutes`);
    const waits = [...credited.values()].map((ms) => ms / 1000);
    afterRow.credit = { p50: percentile(0.5, waits), p95: percentile(0.95, waits), max: Math.max(...waits) };
    rows.push(afterRow);

    // Before: one round of the per-checkout read, as the watches made it every sync period.
    const evm = services.providers.evm!;
    const indexes = await services.orm.em
      .fork()
      .execute<{ derivation_index: number }[]>(
        `select derivation_index from evm_checkouts where state in ('pending', 'paid') order by derivation_index`,
      );
    calls = callsOf(ctx.proxy);
    started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: BEFORE_CONCURRENCY }, async () => {
        for (let i = next++; i < indexes.length; i = next++) {
          const checkout = (await evmCheckoutAt(services.orm.em.fork(), indexes[i].derivation_index))!;
          await scanCheckout(services.orm.em.fork(), checkout, evm.rpcs);
        }
      }),
    );
    const roundSeconds = (Date.now() - started) / 1000;
    d = delta(calls, callsOf(ctx.proxy));
    // The scanner ticks on meanwhile: its share of the calls is taken out.
    const scannerTicks = roundSeconds / afterRow.readSeconds;
    const own = total(d) - scannerTicks * (afterRow.callsPerMinute / 60) * afterRow.readSeconds;
    rows.push({
      checkouts: size,
      mode: 'before',
      callsPerMinute: own * (60 / SYNC_SECONDS),
      getLogsPerRead: d.eth_getLogs - scannerTicks * afterRow.getLogsPerRead,
      readSeconds: roundSeconds,
    });
  } finally {
    await services.stop();
  }
  return rows;
}

async function connectPg(url: string) {
  const { Client } = await import('pg');
  const client = new Client({ connectionString: url });
  await client.connect();
  return client;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'wholesale-bench-chain-scan-'));
  console.log(
    `bench/chain-scan: ${SIZES.map(fmt).join(' and ')} open checkouts, 10% paid; PAYMENT_SYNC_SECONDS=${SYNC_SECONDS}, EVM_SCAN_ADDRESSES_PER_CALL=${PER_CALL}, EVM_WATCH_FALLBACK_SECONDS=${FALLBACK_SECONDS}`,
  );
  const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), port: await freeLowPort(), database: 'postgres' });
  const temporal = await startDevTemporal({ port: await freeLowPort(), uiPort: 0, namespace: 'default' });
  const chain = await startDevChain();
  const proxy = await startRpcProxy(chain.rpcUrl);
  const rows: Row[] = [];
  try {
    for (const size of SIZES)
      rows.push(...(await measure(size, { pgUrlFor: pg.urlFor, temporalAddress: temporal.address, chain, proxy })));
  } finally {
    await proxy.stop();
    await chain.stop();
    await temporal.stop();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    '\n| open checkouts | chain reads | RPC calls / min | eth_getLogs per read | s per read (scanner: tick, with its sync pause) | confirmation → credit p50 / p95 / max (s) |',
  );
  console.log('|---:|---|---:|---:|---:|---|');
  for (const r of rows) {
    const credit = r.credit
      ? `${r.credit.p50.toFixed(1)} / ${r.credit.p95.toFixed(1)} / ${r.credit.max.toFixed(1)}`
      : `waits for its checkout's turn: up to one read`;
    console.log(
      `| ${fmt(r.checkouts)} | ${r.mode === 'after' ? 'one scan per chain' : 'per checkout (before)'} | ${fmt(r.callsPerMinute)} | ${fmt(r.getLogsPerRead)} | ${r.readSeconds.toFixed(1)} | ${credit} |`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
