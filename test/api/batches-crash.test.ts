import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { parseDecimal, toDecimal } from '../../src/domain/money';
import { TEST_PRODUCT_ID } from '../../src/domain/test-product';
import { freePort, reseller, startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { killed } from '../helpers/processes';

// Issue 40, done-when: a 2,000-line batch with lines over the balance and duplicates gets, line by
// line, what 2,000 single orders sent one after another would have got; balance and ledger are
// exact; and it survives its worker (the production `npm run worker` process) killed with SIGKILL
// mid-batch. The expectation is the order API's rules applied in line order (checked against real
// single orders, line by line, in batches.test.ts): test-product rules, then a replay or a conflict
// on a known externalOrderId, then product, price lock, balance.
const LINES = 2000;
const env = { RATE_LIMIT_PER_MINUTE: '100000' };
let h: Harness;
let worker: ChildProcess;
let metricsPort: number;

beforeAll(async () => {
  h = await startHarness(env, { worker: false });
  metricsPort = await freePort();
});
afterAll(async () => {
  await killed(worker);
  await h?.stop();
});

const startWorker = async () => {
  const w = startWorkerProcess(h, { ...env, METRICS_PORT: String(metricsPort) });
  await eventually(
    async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200,
    90_000,
    250,
    'worker process ready',
  );
  return w;
};

type Line = { externalOrderId: string; productId: string; qty: number; expectedUnitPrice?: string };

/** Cheap test-product orders, ChatGPT orders of 1 to 3, Telegram orders with right and wrong price locks, repeats of earlier ids, unknown products. */
function lineOf(i: number, telegramPrice: string): Line {
  switch (i % 10) {
    case 6:
      return { externalOrderId: `c-${i}`, productId: 'prod_chatgpt_plus_1m', qty: 1 + (Math.floor(i / 10) % 3) };
    case 7:
      return {
        externalOrderId: `g-${i}`,
        productId: 'prod_telegram_premium_3m',
        qty: 1,
        ...(i % 40 === 27 ? { expectedUnitPrice: '1.00' } : i % 20 === 7 ? { expectedUnitPrice: telegramPrice } : {}),
      };
    // The same order as two lines before: a replay, or (if that one was refused) a fresh try.
    case 8:
      return lineOf(i - 2, telegramPrice);
    // An earlier ChatGPT id with one more unit (a conflict where it was placed), or a product that does not exist.
    case 9:
      return i % 20 === 9
        ? { ...lineOf(i - 3, telegramPrice), qty: 1 + lineOf(i - 3, telegramPrice).qty }
        : { externalOrderId: `x-${i}`, productId: 'prod_unknown', qty: 1 };
    default:
      return { externalOrderId: `t-${i}`, productId: TEST_PRODUCT_ID, qty: 1 };
  }
}

type Expected = { status: 'placed'; reused: boolean; ofLine: number } | { status: 'rejected'; error: string };

/** The order API's rules, line after line, from `balance` at the account's prices. */
function expectedOutcomes(lines: Line[], balance: number, prices: Map<string, number>) {
  const placed = new Map<string, { line: Line; index: number }>();
  const outcomes = lines.map((l, i): Expected => {
    if (l.productId === TEST_PRODUCT_ID && l.qty !== 1) return { status: 'rejected', error: 'api_test_quantity' };
    const prior = placed.get(l.externalOrderId);
    if (prior)
      return prior.line.productId === l.productId && prior.line.qty === l.qty
        ? { status: 'placed', reused: true, ofLine: prior.index }
        : { status: 'rejected', error: 'idempotency_conflict' };
    const price = prices.get(l.productId);
    if (price === undefined) return { status: 'rejected', error: 'not_found' };
    if (l.expectedUnitPrice !== undefined && parseDecimal(l.expectedUnitPrice) !== price)
      return { status: 'rejected', error: 'price_changed' };
    if (price * l.qty > balance) return { status: 'rejected', error: 'insufficient_balance' };
    balance -= price * l.qty;
    placed.set(l.externalOrderId, { line: l, index: i });
    return { status: 'placed', reused: false, ofLine: i };
  });
  return { outcomes, balance, orders: placed.size };
}

test(`a ${LINES}-line batch with lines over the balance and repeated ids: every line as a single order would be, balance and ledger exact, through SIGKILL of its worker`, async () => {
  const r = await reseller(h, '4000.00');
  worker = await startWorker();
  const prices = new Map<string, number>(
    ((await r.api.get('/products')).body.products as { id: string; price: string }[]).map((p) => [
      p.id,
      parseDecimal(p.price),
    ]),
  );
  prices.set(TEST_PRODUCT_ID, 1);
  const lines = Array.from({ length: LINES }, (_, i) => lineOf(i, toDecimal(prices.get('prod_telegram_premium_3m')!)));
  const model = expectedOutcomes(lines, 400_000, prices);
  // The batch runs out of balance part of the way through, and has every kind of line either side of that.
  const kindOf = (o: Expected) => (o.status === 'placed' ? (o.reused ? 'reused' : 'placed') : o.error);
  const kinds = new Map<string, number>();
  for (const o of model.outcomes) kinds.set(kindOf(o), (kinds.get(kindOf(o)) ?? 0) + 1);
  expect(Object.fromEntries(kinds)).toEqual({
    placed: expect.any(Number),
    reused: expect.any(Number),
    insufficient_balance: expect.any(Number),
    idempotency_conflict: expect.any(Number),
    price_changed: expect.any(Number),
    not_found: expect.any(Number),
  });
  for (const n of kinds.values()) expect(n).toBeGreaterThan(40);
  expect(kinds.get('insufficient_balance')).toBeGreaterThan(200);

  const began = Date.now();
  const accepted = await r.api.post('/batches', { externalBatchId: 'crash-1', lines });
  expect(accepted.status).toBe(200);
  const progress = async () => (await r.api.get(`/batches/${accepted.body.batchId}`)).body;
  await eventually(async () => (await progress()).pending <= LINES - 400, 120_000, 100, '400 lines placed');
  worker.kill('SIGKILL');
  await once(worker, 'exit');
  const atKill = await progress();
  expect(atKill.pending).toBeGreaterThan(0);
  worker = await startWorker();
  const done = await eventually(
    async () => {
      const p = await progress();
      return p.status === 'completed' ? p : undefined;
    },
    240_000,
    250,
    'batch completed',
  );
  const seconds = (Date.now() - began) / 1000;

  const got: any[] = [];
  for (let cursor: string | null = null; ;) {
    const res: { body: any } = await r.api.get(
      `/batches/${accepted.body.batchId}/lines?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    got.push(...res.body.lines);
    if (!res.body.hasMore) break;
    cursor = res.body.nextCursor;
  }
  expect(got.map((l) => l.line)).toEqual(lines.map((_, i) => i + 1));
  const asExpected = got.map((l): Expected =>
    l.status === 'placed'
      ? {
          status: 'placed',
          reused: l.reused,
          ofLine: got.findIndex((first) => first.orderId === l.orderId && !first.reused),
        }
      : { status: 'rejected', error: l.rejection.error },
  );
  const differs = asExpected.findIndex((o, i) => JSON.stringify(o) !== JSON.stringify(model.outcomes[i]));
  expect(
    differs < 0
      ? 'every line as expected'
      : { line: differs + 1, got: got[differs], expected: model.outcomes[differs] },
  ).toBe('every line as expected');
  const placed = model.outcomes.filter((o) => o.status === 'placed').length;
  expect(done).toMatchObject({ total: LINES, pending: 0, placed, rejected: LINES - placed });

  // One order and one debit per id placed, whatever the kill interrupted; the balance is the model's.
  const [orders] = await h.services.orm.em
    .fork()
    .execute<{ n: string }[]>(`select count(*) as n from orders where account_id = ? and kind = 'purchase'`, [
      r.accountId,
    ]);
  expect(Number(orders.n)).toBe(model.orders);
  const ledger = await expectLedgerMatchesBalance(h, r.accountId);
  expect(ledger.balance).toBe(toDecimal(model.balance));
  expect(ledger.rows.filter((row) => row.type === 'purchase')).toHaveLength(model.orders);
  process.stdout.write(
    `\nbatch of ${LINES} lines: ${seconds.toFixed(1)} s with its worker killed after ${LINES - atKill.pending} lines; ` +
      `${placed} placed (${model.orders} orders), ${LINES - placed} refused\n`,
  );
}, 300_000);
