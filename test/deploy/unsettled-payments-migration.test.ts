import { initOrm, type Orm } from '../../src/db/orm';
import { pendingPayments } from '../../src/db/reconcile-store';
import { createTestDatabase } from '../helpers/harness';

// Migration20261216000000UnsettledPayments on a database that already holds payments: settled
// ones are marked settled, an EVM checkout already paid gets its `chain` confirmation, and what a
// lost notice left before this version (an expired order with its payment on record) is open, so
// the reconciler's first pass after the upgrade finds it. Down takes it all back.
const BEFORE = 'Migration20261215000000ChainScans';
/** Up to this one only, so `down` takes back this one (later migrations are not its subject). */
const MIGRATION = 'Migration20261216000000UnsettledPayments';
const ACCOUNT = '00000000-0000-4000-8000-0000000000aa';
let orm: Orm;

beforeAll(async () => {
  orm = await initOrm(await createTestDatabase(), { pool: { min: 0, max: 2 } }, { quietMigrations: true });
  await orm.getMigrator().up({ to: BEFORE });
  const em = orm.em.fork();
  await em.execute(`insert into accounts (id, name, balance) values (?, 'migration', 0)`, [ACCOUNT]);
  // Intent orders of the test product, delivered or expired, an hour old.
  for (const [id, status] of [
    ['ord_cb_paid', 'delivered'],
    ['ord_cb_expired', 'expired'],
    ['ord_evm_paid', 'delivered'],
    ['ord_evm_expired', 'expired'],
    ['ord_evm_unpaid', 'expired'],
  ])
    await em.execute(
      `insert into orders (id, account_id, kind, channel, source, external_order_id, product_id, qty, unit_price, amount, currency,
                           payment, status, delivery_type, created_at, updated_at, expires_at)
       values (?, ?, 'purchase', 'wholesale_api', 'rest', ?, 'prod_chatgpt_plus_1m', 1, 1.00, 1.00, 'USDT', 'intent', ?, 'redemption',
               now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour')`,
      [id, ACCOUNT, `ext-${id}`, status],
    );
  for (const id of ['ord_cb_paid', 'ord_cb_expired'])
    await em.execute(
      `insert into payment_confirmations (checkout_id, order_id, source, confirmed_at) values (?, ?, 'callback', now() - interval '1 hour')`,
      [`chk_${id}`, id],
    );
  for (const [n, id, paid] of [
    [1, 'ord_evm_paid', true],
    [2, 'ord_evm_expired', true],
    [3, 'ord_evm_unpaid', false],
  ] as const)
    await em.execute(
      `insert into evm_checkouts (id, reference, derivation_index, address, amount, currency, state, paid_at, created_at)
       values (?, ?, ?, ?, 1.00, 'USDT', ?, ${paid ? `now() - interval '1 hour'` : 'null'}, now() - interval '1 hour')`,
      [`chk_${id}`, id, n, `0x${String(n).padStart(40, '0')}`, paid ? 'paid' : 'closed'],
    );
}, 60_000);

afterAll(() => orm?.close());

const confirmations = () =>
  orm.em
    .fork()
    .execute<{ order_id: string; source: string; settled: boolean }[]>(
      'select order_id, source, settled_at is not null as settled from payment_confirmations order by order_id',
    );

test('up: settled payments are marked settled, paid EVM checkouts get their confirmation, and the expired ones with a payment are open for the reconciler', async () => {
  await orm.getMigrator().up({ to: MIGRATION });
  expect(await confirmations()).toEqual([
    { order_id: 'ord_cb_expired', source: 'callback', settled: false },
    { order_id: 'ord_cb_paid', source: 'callback', settled: true },
    { order_id: 'ord_evm_expired', source: 'chain', settled: false },
    { order_id: 'ord_evm_paid', source: 'chain', settled: true },
  ]);
  const page = await pendingPayments(orm.em.fork(), '', 10, 0);
  expect(page.map((r) => [r.id, r.status])).toEqual([
    ['ord_cb_expired', 'expired'],
    ['ord_evm_expired', 'expired'],
  ]);
});

test('down: the chain confirmations, the column and the index are taken back', async () => {
  await orm.getMigrator().down();
  const em = orm.em.fork();
  expect(
    await em.execute(
      `select column_name from information_schema.columns where table_name = 'payment_confirmations' and column_name = 'settled_at'`,
    ),
  ).toEqual([]);
  expect(
    await em.execute(`select indexname from pg_indexes where indexname = 'payment_confirmations_unsettled_index'`),
  ).toEqual([]);
  expect(await em.execute('select order_id, source from payment_confirmations order by order_id')).toEqual([
    { order_id: 'ord_cb_expired', source: 'callback' },
    { order_id: 'ord_cb_paid', source: 'callback' },
  ]);
  await expect(
    em.execute(
      `insert into payment_confirmations (checkout_id, order_id, source) values ('x', 'ord_evm_unpaid', 'chain')`,
    ),
  ).rejects.toThrow(/payment_confirmations_source_check/);
});
