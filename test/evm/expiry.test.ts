import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { depositAddressOf, evmEnv, transfersOf, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { waitForOrderStatus } from '../helpers/payments';

// Issue 25: payments that come late. Within the late-payment watch the order is still delivered
// (spec 7: late payments are honoured); after it, or if what arrived never reached the amount,
// nothing is lost: the money is credited to the account's balance as its own ledger entry.
const WINDOW = 4;
const LATE_WATCH = 8;
let chain: DevChain;
let h: Harness;

beforeAll(async () => {
  chain = await startDevChain();
  h = await startHarness({
    ...evmEnv(chain, { confirmations: 1 }),
    PAYMENT_WINDOW_SECONDS: String(WINDOW),
    LATE_PAYMENT_WATCH_SECONDS: String(LATE_WATCH),
    EVM_ADDRESS_WATCH_SECONDS: '60',
    EVM_ADDRESS_POLL_SECONDS: '1',
  });
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await chain?.stop();
});

async function expiredOrder(externalOrderId: string) {
  const r = await reseller(h);
  const order = (
    await r.api.post('/orders', { externalOrderId, productId: 'prod_chatgpt_team_1m', qty: 1, payment: 'intent' })
  ).body;
  const address = await depositAddressOf(h, order.checkoutUrl);
  await waitForOrderStatus(r.api, order.orderId, 'expired');
  return { ...r, order, address };
}

test('paid in full after expiry but within the late watch: the order is delivered late', async () => {
  const { api, accountId, order, address } = await expiredOrder('late-in-watch');
  await chain.pay(address, 'USDT', units6(order.amount));
  const delivered = await waitForOrderStatus(api, order.orderId, 'delivered');
  expect(delivered.codes).toHaveLength(1);
  expect(await expectLedgerMatchesBalance(h, accountId)).toMatchObject({
    balance: '0.00',
    rows: [],
    spending: '25.00',
  });
}, 60_000);

test('paid in full after the late watch: the order stays expired and the money is credited to the balance', async () => {
  const { api, accountId, order, address } = await expiredOrder('late-after-watch');
  await new Promise((r) => setTimeout(r, LATE_WATCH * 1000 + 1000));
  await chain.pay(address, 'USDT', units6(order.amount));
  await eventually(async () => (await api.get('/balance')).body.balance === '25.00', 30_000);
  expect((await api.get(`/orders/${order.orderId}`)).body).toMatchObject({ status: 'expired', codes: [] });
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '25.00', order_id: order.orderId })]);
  expect(await transfersOf(h, order.checkoutUrl)).toEqual([
    expect.objectContaining({ applied: 'excess', credit_reason: 'after_expiry', excess_cents: '2500' }),
  ]);
}, 60_000);

test('a partial payment that never reached the amount is credited to the balance once the late watch is over', async () => {
  const r = await reseller(h);
  const order = (
    await r.api.post('/orders', {
      externalOrderId: 'late-partial',
      productId: 'prod_chatgpt_team_1m',
      qty: 1,
      payment: 'intent',
    })
  ).body;
  await chain.pay(await depositAddressOf(h, order.checkoutUrl), 'USDT', units6('10.00'));
  await waitForOrderStatus(r.api, order.orderId, 'expired');
  expect((await r.api.get('/balance')).body.balance).toBe('0.00');
  await eventually(async () => (await r.api.get('/balance')).body.balance === '10.00', 30_000);
  expect((await r.api.get(`/orders/${order.orderId}`)).body.status).toBe('expired');
  const money = await expectLedgerMatchesBalance(h, r.accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '10.00', order_id: order.orderId })]);
}, 60_000);
