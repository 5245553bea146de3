// bench/lists: GET /orders and GET /transactions over HTTP for one account holding 1k rows and
// one holding 100k, first page and a deep cursor (90% down the list), so the cost of paging is a
// ratio from one run: it must not grow with the table. Usage (with `npm start` running):
//   npm run bench:lists -- [SMALL=1000] [LARGE=100000] [REPEAT=50]
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../src/config';
import { initOrm, type Orm } from '../src/db/orm';
import { createAccount } from '../src/services/accounts/accounts';
import { encodeCursor } from '../src/services/cursor';

const SMALL = Number(process.argv[2] ?? 1000);
const LARGE = Number(process.argv[3] ?? 100_000);
const REPEAT = Number(process.argv[4] ?? 50);

/** An account with `n` orders and `n` ledger rows, written in bulk (the balance matches the ledger). */
async function seedAccount(orm: Orm, n: number): Promise<{ accountId: string; apiKey: string }> {
  const em = orm.em.fork();
  const account = await createAccount(em, `bench-lists-${n}`);
  const tag = randomUUID().slice(0, 8);
  await em.execute(
    `insert into orders (id, account_id, kind, channel, source, external_order_id, product_id, qty, unit_price, amount, currency, payment, status, delivery_type)
     select 'ord_bl_' || ? || '_' || g, ?, 'purchase', 'wholesale_api', 'rest', 'bl-' || g, 'prod_api_order_test', 1, 0.01, 0.01, 'USDT', 'balance', 'delivered', 'redemption'
       from generate_series(1, ?) g`,
    [tag, account.accountId, n],
  );
  await em.execute(
    `insert into ledger_transactions (account_id, type, amount, balance_after, order_id, idempotency_key)
     select ?, 'adjust', 1.00, g * 1.00, null, 'bl:' || ? || ':' || g from generate_series(1, ?) g`,
    [account.accountId, tag, n],
  );
  await em.execute('update accounts set balance = ? where id = ?', [n.toFixed(2), account.accountId]);
  await em.execute('analyze orders');
  await em.execute('analyze ledger_transactions');
  return account;
}

/** A cursor 90% down the list, made as the API would make it (the bench knows CURSOR_SECRET). */
async function deepCursor(
  orm: Orm,
  secret: string,
  accountId: string,
  list: 'orders' | 'transactions',
  n: number,
): Promise<string> {
  const depth = Math.floor(n * 0.9);
  const sql =
    list === 'orders'
      ? 'select order_number as p from orders where account_id = ? order by order_number desc offset ? limit 1'
      : 'select id as p from ledger_transactions where account_id = ? order by id desc offset ? limit 1';
  const [row] = await orm.em.fork().execute<{ p: string }[]>(sql, [accountId, depth]);
  const filters = list === 'orders' ? { e: null } : { t: null };
  return encodeCursor({ secret, accountId, list, filters }, Number(row.p));
}

async function p50(url: string, key: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    await res.text();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

async function main() {
  const config = loadConfig();
  const databaseUrl =
    config.DATABASE_URL ?? `postgres://postgres:wholesale@127.0.0.1:${config.EMBEDDED_PG_PORT}/wholesale`;
  const apiUrl = process.env.BENCH_API_URL ?? `${config.publicBaseUrl}/wholesale/v1`;
  const orm = await initOrm(databaseUrl);
  const small = await seedAccount(orm, SMALL);
  const large = await seedAccount(orm, LARGE);

  const rows: [string, number, number][] = [];
  for (const list of ['orders', 'transactions'] as const) {
    const path = `${apiUrl}/${list}?limit=50`;
    const first = [await p50(path, small.apiKey), await p50(path, large.apiKey)];
    const deep = [
      await p50(
        `${path}&cursor=${encodeURIComponent(await deepCursor(orm, config.CURSOR_SECRET, small.accountId, list, SMALL))}`,
        small.apiKey,
      ),
      await p50(
        `${path}&cursor=${encodeURIComponent(await deepCursor(orm, config.CURSOR_SECRET, large.accountId, list, LARGE))}`,
        large.apiKey,
      ),
    ];
    rows.push([`GET /${list} first page`, first[0], first[1]], [`GET /${list} deep cursor (90%)`, deep[0], deep[1]]);
  }

  console.log(
    `\nbench/lists  ${SMALL} vs ${LARGE} rows per account, p50 of ${REPEAT} requests each  (${new Date().toISOString()})\n`,
  );
  console.log(
    `query                                   ${`${SMALL} rows ms`.padStart(13)} ${`${LARGE} rows ms`.padStart(15)}   ratio`,
  );
  let worst = 0;
  for (const [name, a, b] of rows) {
    worst = Math.max(worst, b / a);
    console.log(
      `${name.padEnd(38)} ${a.toFixed(2).padStart(13)} ${b.toFixed(2).padStart(15)}   ${(b / a).toFixed(2)}x`,
    );
  }
  console.log(`\nworst ratio ${worst.toFixed(2)}x (goal: at most 1.5x)`);
  await orm.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
