import {
  currentBalanceAndLevel,
  readPlacement,
  writeBalanceOrder,
  type BalanceOrderWrite,
} from '../../src/db/placement-store';
import { newId } from '../../src/codes';
import { placeOrder } from '../../src/services/orders/order-placement';
import { startHarness, type Harness } from '../helpers/harness';
import { expectLedgerMatchesBalance } from '../helpers/money';

// The balance placement's write (src/db/placement-store.ts) against real Postgres: it debits only if the
// balance and the level read still hold, and otherwise writes nothing at all; a collision of a new
// code or a second placement of one externalOrderId also leaves nothing behind. The HTTP order
// tests cover the paths a request takes; these pin the branches a race takes.
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

const product = {
  id: 'prod_chatgpt_plus_1m',
  currency: 'USDT',
  deliveryType: 'redemption',
  stockMode: 'on_demand',
  isTest: false,
} as const;

function write(accountId: string, over: Partial<BalanceOrderWrite> = {}): BalanceOrderWrite {
  return {
    orderId: newId('ord'),
    accountId,
    level: 1,
    newLevel: 1,
    amount: '18.00',
    unitPrice: '18.00',
    product,
    qty: 1,
    source: 'rest',
    externalOrderId: `w-${newId('x')}`,
    placementId: null,
    newCodes: [`TEST-${newId('c', 6)}`],
    atomic: true,
    event: { id: newId('evt'), payload: { orderId: 'set below' } },
    lowEventId: newId('evt'),
    ...over,
  };
}

async function rows(accountId: string) {
  const em = h.services.orm.em.fork();
  const [orders] = await em.execute<{ n: string }[]>('select count(*) as n from orders where account_id = ?', [
    accountId,
  ]);
  const [events] = await em.execute<{ n: string }[]>('select count(*) as n from events where account_id = ?', [
    accountId,
  ]);
  const [codes] = await em.execute<{ n: string }[]>('select count(*) as n from issued_codes where account_id = ?', [
    accountId,
  ]);
  return {
    orders: Number(orders.n),
    events: Number(events.n),
    codes: Number(codes.n),
    ...(await currentBalanceAndLevel(em, accountId)),
  };
}

test('a write debits, and inserts the order, its ledger row, its codes and its event in one statement', async () => {
  const { accountId } = await h.account('50.00');
  const w = write(accountId);
  const out = await writeBalanceOrder(h.services.orm.em.fork(), w);
  expect(out).toEqual({ debited: true, taken: 0, codes: w.newCodes });
  expect(await rows(accountId)).toMatchObject({ orders: 1, events: 1, codes: 1, balance: '32.00' });
  const [event] = await h.services.orm.em
    .fork()
    .execute<{ payload: { codes: string[] } }[]>('select payload from events where account_id = ?', [accountId]);
  expect(event.payload.codes).toEqual(w.newCodes);
  await expectLedgerMatchesBalance(h, accountId);
});

test.each([
  ['the balance no longer covers the amount', { amount: '60.00', unitPrice: '60.00' }],
  ['the level is no longer the one the price was read at', { level: 2, newLevel: 2 }],
])('%s: nothing is written', async (_name, over) => {
  const { accountId } = await h.account('50.00');
  const out = await writeBalanceOrder(h.services.orm.em.fork(), write(accountId, over));
  expect(out).toMatchObject({ debited: false, codes: [] });
  expect(await rows(accountId)).toMatchObject({ orders: 0, events: 0, codes: 0, balance: '50.00', level: 1 });
  await expectLedgerMatchesBalance(h, accountId);
});

test('a new code that collides with an issued one fails the write whole (collided)', async () => {
  const { accountId } = await h.account('50.00');
  const first = write(accountId);
  await writeBalanceOrder(h.services.orm.em.fork(), first);
  const out = await writeBalanceOrder(h.services.orm.em.fork(), write(accountId, { newCodes: first.newCodes }));
  expect(out).toMatchObject({ debited: false, collided: true });
  expect(await rows(accountId)).toMatchObject({ orders: 1, events: 1, codes: 1, balance: '32.00' });
  await expectLedgerMatchesBalance(h, accountId);
});

test('a second placement of one externalOrderId that lost the race writes nothing (raced); the next read finds the first', async () => {
  const { accountId } = await h.account('50.00');
  const first = write(accountId);
  await writeBalanceOrder(h.services.orm.em.fork(), first);
  const out = await writeBalanceOrder(
    h.services.orm.em.fork(),
    write(accountId, { externalOrderId: first.externalOrderId }),
  );
  expect(out).toMatchObject({ debited: false, raced: true });
  expect(await rows(accountId)).toMatchObject({ orders: 1, balance: '32.00' });
  const read = await readPlacement(h.services.orm.em.fork(), {
    accountId,
    productId: product.id,
    externalOrderId: first.externalOrderId,
  });
  expect(read.existing).toMatchObject({
    id: first.orderId,
    productId: product.id,
    qty: 1,
    amount: '18.00',
    status: 'delivered',
  });
  await expectLedgerMatchesBalance(h, accountId);
});

test('placeOrder reads again when a concurrent top-up raised the level between its read and its write, and charges the new price', async () => {
  // Lv2 from 500 USDT of spending plus balance (LEVEL_THRESHOLDS), 2 % off the Lv1 price of 18.00.
  const { accountId } = await h.account('499.00');
  const em = h.services.orm.em.fork();
  // The level moves in the window between the read and the write: a top-up commits after the read.
  const execute = em.execute.bind(em);
  let reads = 0;
  (em as { execute: typeof em.execute }).execute = (async (sql: string, params?: unknown[]) => {
    const result = await execute(sql, params);
    if (sql.includes('"o$existing"') && reads++ === 0) {
      await h.services.orm.em
        .fork()
        .execute(`update accounts set balance = balance + 1, level = 2 where id = ?`, [accountId]);
      await h.services.orm.em
        .fork()
        .execute(
          `insert into ledger_transactions (account_id, type, amount, balance_after, idempotency_key) select id, 'adjust', 1, balance, ? from accounts where id = ?`,
          [newId('adj'), accountId],
        );
    }
    return result;
  }) as typeof em.execute;
  const placed = await placeOrder(
    em,
    { accountId, externalOrderId: 'level-race', productId: product.id, qty: 1, payment: 'balance', source: 'rest' },
    {
      levelThresholds: h.config.LEVEL_THRESHOLDS,
      publicBaseUrl: h.baseUrl,
    },
  );
  expect(reads).toBe(2);
  expect(placed.order).toMatchObject({ status: 'delivered', amount: '17.64' });
  expect(await rows(accountId)).toMatchObject({ orders: 1, balance: '482.36', level: 2 });
  await expectLedgerMatchesBalance(h, accountId);
});
