// bench/orders: N balance orders at concurrency C through the running stack (HTTP → Temporal
// update-with-start → local activity → Postgres), next to N bare Postgres debit transactions and
// N empty Temporal update-with-start round trips measured in this same process, so each layer's
// overhead is a ratio from one run. Each phase is warmed up first (its first requests create task
// queues, pool connections and JIT state) and starts once the previous one's background work has
// settled, so the engine's bar is not measured cold or in another phase's wake. Exits non-zero if
// any order failed.
// Usage (with `npm start` running):   npm run bench:orders -- [N=300] [C=16]
// Both engines in one command, each on a fresh stack of its own, rounds alternated and medians
// printed:   npm run bench:orders -- --engines dev,server [--rounds 3] [N=300] [C=1,16]
import { Agent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config';
import { initOrm } from '../src/db/orm';
import { createAccount, createApiKey } from '../src/services/accounts/accounts';
import { adjustBalance } from '../src/services/payments/admin';
import { applyBalanceChange, lockAccount } from '../src/services/payments/ledger';
import { barWorker, emptyUpdateWithStart } from './bar';
import type { DataConverter } from '@temporalio/common';
import { dataConverter, parseKeyRing } from '../src/temporal/codec';
import { pct, post, runPool, type Result } from './pool';
import { compareEngines } from './orders-engines';

const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
const N = Number(positional[0] ?? 300);
const C = Number.parseInt(positional[1] ?? '16', 10);
/**
 * Unmeasured requests before each phase (on a freshly started stack the first hundred orders run
 * before the JIT has compiled their path), and the pause that lets the previous phase's tail settle.
 */
const WARMUP = Math.max(2 * C, Math.min(100, Math.ceil(N / 2)));
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 3000);
const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

// One keep-alive connection per concurrent client.
const agent = new Agent({ keepAlive: true, maxSockets: C });

function report(results: Result[]) {
  const [http, engine, encrypted] = results;
  const base = results[results.length - 1];
  console.log(`\nbench/orders  N=${N}  C=${C}  (${new Date().toISOString()})\n`);
  console.log('layer                                   orders/s    p50 ms    p99 ms   failures   p50 vs Postgres');
  for (const r of results) {
    const s = [...r.latencies].sort((a, b) => a - b);
    const baseP50 = pct(
      [...base.latencies].sort((a, b) => a - b),
      50,
    );
    console.log(
      `${r.name.padEnd(38)} ${(N / r.seconds).toFixed(1).padStart(9)} ${pct(s, 50).toFixed(1).padStart(9)} ${pct(s, 99).toFixed(1).padStart(9)} ${String(r.failures).padStart(10)} ${(pct(s, 50) / baseP50).toFixed(1).padStart(12)}x`,
    );
  }
  // The engine is the bar: an order should cost little more than Temporal's own round trip.
  const p50 = (r: Result) =>
    pct(
      [...r.latencies].sort((a, b) => a - b),
      50,
    );
  console.log(`
HTTP order vs empty update-with-start, C=${C}: throughput ${(http.seconds > 0 ? engine.seconds / http.seconds : 0).toFixed(2)}x, p50 ${(p50(http) / p50(engine)).toFixed(2)}x`);
  console.log(
    `payload codec on the empty update-with-start, C=${C}: throughput ${(engine.seconds / encrypted.seconds).toFixed(2)}x, p50 ${(p50(encrypted) / p50(engine)).toFixed(2)}x`,
  );
}

/** Rate and p50/p99 of each phase, for the engines driver (bench/orders-engines.ts). */
function summary(results: Result[]) {
  return Object.fromEntries(
    results.map((r) => {
      const s = [...r.latencies].sort((a, b) => a - b);
      return [r.name.trim(), { rate: N / r.seconds, p50: pct(s, 50), p99: pct(s, 99), failures: r.failures }];
    }),
  );
}

async function main() {
  const config = loadConfig();
  const databaseUrl =
    config.DATABASE_URL ?? `postgres://postgres:wholesale@127.0.0.1:${config.EMBEDDED_PG_PORT}/wholesale`;
  const temporalAddress = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
  const apiUrl = process.env.BENCH_API_URL ?? `${config.publicBaseUrl}/wholesale/v1`;
  const orm = await initOrm(databaseUrl);
  const em = orm.em.fork();
  const funding = ((N + WARMUP) * 0.02 + 1).toFixed(2);
  const [httpAcct, pgAcct] = [await createAccount(em, 'bench-http'), await createAccount(em, 'bench-pg')];
  for (const a of [httpAcct, pgAcct]) {
    await adjustBalance(em, {
      accountId: a.accountId,
      amount: funding,
      note: 'bench funding',
      levelThresholds: config.LEVEL_THRESHOLDS,
    });
  }

  // One key per concurrent client of the same account: the 300/min limit is per key.
  const keys = [httpAcct.apiKey];
  while (keys.length < C) keys.push(await createApiKey(em, httpAcct.accountId));

  // 1. The whole stack, over HTTP.
  const runId = randomUUID().slice(0, 8);
  const order = (tag: string) => async (i: number) =>
    (
      await post(
        agent,
        `${apiUrl}/orders`,
        { authorization: `Bearer ${keys[i % C]}`, 'content-type': 'application/json' },
        JSON.stringify({ externalOrderId: `bench-${runId}-${tag}${i}`, productId: 'prod_api_order_test', qty: 1 }),
      )
    ).status === 200;
  const warm = await runPool('warm-up', WARMUP, C, order('w'));
  if (warm.failures > 0) throw new Error(`${warm.failures} of ${WARMUP} warm-up orders failed`);
  await settle();
  const http = await runPool('HTTP order (API+Temporal+Postgres)', N, C, order(''));

  // 2. Empty Temporal update-with-start round trips, on a worker in this process: as they are,
  // and with the service's payload encryption (the codec's own cost, from the same run).
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  const connection = await Connection.connect({ address: temporalAddress });
  const engine = async (name: string, converter: DataConverter | undefined): Promise<Result> => {
    const taskQueue = `bench-${runId}-${converter ? 'enc' : 'plain'}`;
    const worker = await barWorker({ connection: nativeConnection, taskQueue, config, dataConverter: converter });
    const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: converter });
    const uws = (tag: string) => (i: number) =>
      emptyUpdateWithStart(client, taskQueue, `bench:${taskQueue}:${tag}${i}`);
    return worker.runUntil(async () => {
      await runPool('warm-up', WARMUP, C, uws('w'));
      await settle();
      return runPool(name, N, C, uws(''));
    });
  };
  await settle();
  const temporal = await engine('empty Temporal update-with-start', undefined);
  const encrypted = await engine(
    '  … with the payload codec',
    dataConverter(parseKeyRing(config.TEMPORAL_PAYLOAD_KEYS)),
  );

  // 3. Bare Postgres debit transactions: lock the account, ledger row, balance update.
  await settle();
  const pg = await runPool('bare Postgres debit transaction', N, C, async (i) => {
    await orm.em.fork().transactional(async (tx) => {
      const account = await lockAccount(tx, pgAcct.accountId);
      await applyBalanceChange(
        tx,
        account,
        { type: 'purchase', amount: -1, spending: 1, idempotencyKey: `bench:${runId}:${i}` },
        config.LEVEL_THRESHOLDS,
      );
    });
    return true;
  });

  report([http, temporal, encrypted, pg]);
  if (process.env.BENCH_JSON) console.log(`BENCH_RESULT ${JSON.stringify(summary([http, temporal, encrypted, pg]))}`);
  agent.destroy();
  await connection.close();
  await nativeConnection.close();
  await orm.close();
  if (http.failures > 0) {
    console.error(`${http.failures} of ${N} orders failed`);
    process.exitCode = 1;
  }
}

const engines = process.argv.indexOf('--engines');
(engines >= 0 ? compareEngines(process.argv.slice(2)) : main()).catch((err) => {
  console.error(err);
  process.exit(1);
});
