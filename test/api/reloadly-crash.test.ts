import { once } from 'node:events';
import { startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { eventually, postRetrying } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { orderUntil, procurementState, reseller, storedCodes } from '../helpers/procurement';
import { FakeReloadly } from '../fakes/reloadly';

// Issue 26 "Done when": a duplicate customIdentifier after a worker SIGKILL mid-call gives the
// same cards, bought once. The worker is the production `npm run worker` process; Reloadly (the
// fake) takes the order at once but answers only after 4 s, and the worker is killed in between.
// The round is retried by Temporal on a new worker under the same key: Reloadly refuses the
// repeat (CUSTOM_IDENTIFIER_ALREADY_USED), the adapter looks the order up and takes its cards.
const PRODUCT = 'prod_roblox_gift_card_us_25';
let fake: FakeReloadly;
let h: Harness;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await FakeReloadly.start();
  env = {
    ...fake.env({ [PRODUCT]: { productId: 18, unitPrice: 25 } }, { RELOADLY_TIMEOUT_MS: '10000' }),
    RATE_LIMIT_PER_MINUTE: '100000',
    PROCUREMENT_RETRY_BASE_SECONDS: '1',
    PROCUREMENT_RETRY_CAP_SECONDS: '1',
    PROCUREMENT_MAX_ROUNDS: '20',
    PROCUREMENT_DEADLINE_SECONDS: '300',
  };
  h = await startHarness(env, { worker: false });
});
afterAll(async () => {
  await h?.stop();
  await fake?.close();
});

test('kill -9 of the worker while Reloadly is answering the order: a restarted worker delivers the same cards, bought once', async () => {
  const { api, accountId } = await reseller(h, '100.00');
  fake.fail('order', { kind: 'slow', delayMs: 4000 });
  let worker = startWorkerProcess(h, env);
  try {
    const placed = await postRetrying(api, '/orders', { externalOrderId: 'rl-crash', productId: PRODUCT, qty: 2 });
    expect(placed.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing' });
    const orderId = placed.body.orderId;
    await eventually(async () => fake.ordersFor(`${orderId}:`).length === 1, 60_000);

    worker.kill('SIGKILL');
    await once(worker, 'exit');
    worker = startWorkerProcess(h, env);
    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered', { timeoutMs: 90_000 });

    const bought = fake.ordersFor(`${orderId}:`);
    expect(bought).toHaveLength(1);
    expect(delivered.codes).toEqual(FakeReloadly.codesOf(bought[0]));
    expect((await storedCodes(h, orderId)).map((c) => c.code)).toEqual(delivered.codes);
    // The killed call's order, then the retried round's repeat, refused and looked up.
    expect(fake.callsTo('order').map((c) => c.status)).toEqual([200, 400]);
    expect(await procurementState(h, orderId)).toMatchObject({ phase: 'delivered', rounds: 1 });
    const [purchase] = await h.services.orm.em
      .fork()
      .execute<{ state: string; transaction_id: string; units: number }[]>(
        'select state, transaction_id, units from supplier_purchases where order_id = ?',
        [orderId],
      );
    expect(purchase).toEqual({ state: 'completed', transaction_id: String(bought[0].transactionId), units: 2 });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.balance).toBe('50.80');
  } finally {
    worker.kill('SIGKILL');
  }
}, 180_000);
