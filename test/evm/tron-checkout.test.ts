import { createPublicClient, http } from 'viem';
import { tronAddress } from '../../src/providers/evm/tron';
import { startTronJsonRpc, TRON_MAINNET_CHAIN_ID, type TronJsonRpc } from '../fakes/tron-jsonrpc';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { transfersOf, tronDepositOf, tronEnv, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, waitForOrderStatus } from '../helpers/payments';

// Issue 38: USDT on TRON, read through a contract fake of java-tron's JSON-RPC (test/fakes/
// tron-jsonrpc.ts: its chain id, `finalized` 19 blocks deep, hex-only filters, its refusals) in
// front of a real Hardhat node, so the transfers are real. Exact, partial, overpaid and late
// payments credit exactly as on an EVM chain (test/evm/checkout.test.ts, expiry.test.ts): the
// chain's kind changes only the addresses and their derivation, never the money's path.
const SOLIDIFIED = 19;
let chain: DevChain;
let tron: TronJsonRpc;
let h: Harness;

beforeAll(async () => {
  chain = await startDevChain();
  tron = await startTronJsonRpc(chain.rpcUrl, { solidifiedDepth: SOLIDIFIED });
  h = await startHarness({
    ...tronEnv(chain, tron.url),
    PAYMENT_WINDOW_SECONDS: '15',
    EVM_ADDRESS_WATCH_SECONDS: '600',
    EVM_ADDRESS_POLL_SECONDS: '1',
  });
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await tron?.stop();
  await chain?.stop();
});

/** Pays `amount` USDT to the TRON address and mines past the solidified depth. */
async function payOnTron(to: `0x${string}`, amount: string) {
  await chain.pay(to, 'USDT', units6(amount));
  await chain.mine(SOLIDIFIED + 1);
}

async function intentOrder(externalOrderId: string) {
  const r = await reseller(h);
  const order = (
    await r.api.post('/orders', { externalOrderId, productId: 'prod_chatgpt_team_1m', qty: 2, payment: 'intent' })
  ).body;
  expect(order).toMatchObject({ status: 'pending', amount: '50.00' });
  return { ...r, order, to: await tronDepositOf(h, order.checkoutUrl) };
}

describe('the java-tron fake answers as its documentation says', () => {
  const rpc = (method: string, params: unknown[]) =>
    fetch(tron.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
    }).then((r) => r.json());

  test('chain id, finalized 19 blocks deep, pending refused, T… refused in filters, ranges capped', async () => {
    expect(await createPublicClient({ transport: http(tron.url) }).getChainId()).toBe(TRON_MAINNET_CHAIN_ID);
    await chain.mine(SOLIDIFIED + 5);
    const head = await chain.blockNumber();
    expect(BigInt((await rpc('eth_getBlockByNumber', ['finalized', false])).result.number)).toBe(
      head - BigInt(SOLIDIFIED),
    );
    expect(await rpc('eth_getBlockByNumber', ['pending', false])).toMatchObject({
      error: { code: -32602, message: 'TAG pending not supported' },
    });
    expect(await rpc('eth_getLogs', [{ fromBlock: 'pending' }])).toMatchObject({
      error: { code: -32602, message: 'TAG pending not supported' },
    });
    const usdt = chain.tokens.USDT.address;
    expect(
      await rpc('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'finalized', address: tronAddress(usdt) }]),
    ).toMatchObject({ error: { code: -32602, message: expect.stringMatching(/^invalid address at index 0: T/) } });
    expect((await rpc('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'finalized', address: usdt }])).result).toEqual(
      expect.any(Array),
    );
    expect(
      (await rpc('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'finalized', address: `0x41${usdt.slice(2)}` }])).result,
    ).toEqual(expect.any(Array));
    expect(await rpc('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x1389' }])).toMatchObject({
      error: { code: -32602, message: 'exceed max block range: 5000' },
    });
    expect(await rpc('eth_getLogs', [{ fromBlock: '0x5', toBlock: '0x4' }])).toMatchObject({
      error: { code: -32602, message: 'please verify: fromBlock <= toBlock' },
    });
    expect(
      await rpc('eth_getLogs', [{ topics: [null, null, Array(1001).fill(`0x${'00'.repeat(32)}`)] }]),
    ).toMatchObject({ error: { code: -32602, message: 'exceed max topics: 1000' } });
  });
});

test('an exact payment in USDT on TRON delivers the order; the page shows the T… address; the API key is sent', async () => {
  const calls = tron.apiKeys.length;
  const { api, accountId, order, to } = await intentOrder('tron-exact');
  const view = await fetch(`${h.baseUrl}/checkout/${checkoutIdOf(order.checkoutUrl)}/status.json`).then((r) =>
    r.json(),
  );
  expect(view.options).toEqual([
    expect.objectContaining({
      chainId: TRON_MAINNET_CHAIN_ID,
      kind: 'tron',
      token: 'USDT',
      address: tronAddress(to),
      uri: tronAddress(to),
      tokenAddress: tronAddress(chain.tokens.USDT.address),
    }),
  ]);
  await payOnTron(to, '50.00');
  const delivered = await waitForOrderStatus(api, order.orderId, 'delivered');
  expect(delivered.codes).toHaveLength(2);
  expect(await transfersOf(h, order.checkoutUrl)).toEqual([
    expect.objectContaining({
      chain_id: TRON_MAINNET_CHAIN_ID,
      state: 'confirmed',
      applied: 'payment',
      excess_cents: '0',
    }),
  ]);
  expect(await expectLedgerMatchesBalance(h, accountId)).toMatchObject({
    balance: '0.00',
    rows: [],
    spending: '50.00',
  });
  // Every call the service made carried TronGrid's key header (the fake's own test calls do not).
  expect(tron.apiKeys.length).toBeGreaterThan(calls);
  expect(new Set(tron.apiKeys.slice(calls))).toEqual(new Set(['test-trongrid-key']));
  expect(tron.count('eth_getLogs')).toBeGreaterThan(0);
});

test('a transfer is not counted before the solidified block reaches it', async () => {
  const { api, order, to } = await intentOrder('tron-depth');
  await chain.pay(to, 'USDT', units6('50.00'));
  await chain.mine(SOLIDIFIED - 3);
  const seen = await eventually(async () => {
    const rows = await transfersOf(h, order.checkoutUrl);
    return rows.length === 1 ? rows : undefined;
  });
  expect(seen[0].state).toBe('seen');
  await new Promise((r) => setTimeout(r, 2500));
  expect((await transfersOf(h, order.checkoutUrl))[0].state).toBe('seen');
  await chain.mine(5);
  await waitForOrderStatus(api, order.orderId, 'delivered');
});

test('a partial payment leaves the order pending; the rest pays it once', async () => {
  const { api, accountId, order, to } = await intentOrder('tron-partial');
  await payOnTron(to, '20.00');
  const partly = await eventually(async () => {
    const res = await api.get(`/orders/${order.orderId}`);
    return res.body.amountReceived === '20.00' ? res.body : undefined;
  });
  expect(partly).toMatchObject({ amountMissing: '30.00', codes: [] });
  await payOnTron(to, '30.00');
  await waitForOrderStatus(api, order.orderId, 'delivered');
  expect((await transfersOf(h, order.checkoutUrl)).map((t) => [t.applied, t.excess_cents])).toEqual([
    ['payment', '0'],
    ['payment', '0'],
  ]);
  expect(await expectLedgerMatchesBalance(h, accountId)).toMatchObject({ balance: '0.00', rows: [] });
});

test('an overpayment pays the order and credits the excess to the balance as its own ledger entry', async () => {
  const { api, accountId, order, to } = await intentOrder('tron-over');
  await payOnTron(to, '57.50');
  await waitForOrderStatus(api, order.orderId, 'delivered');
  const money = await eventually(async () => {
    const m = await expectLedgerMatchesBalance(h, accountId);
    return m.rows.length === 1 ? m : undefined;
  });
  expect(money).toMatchObject({ balance: '7.50', rows: [{ type: 'topup', amount: '7.50', order_id: order.orderId }] });
  expect((await transfersOf(h, order.checkoutUrl))[0]).toMatchObject({
    applied: 'payment',
    excess_cents: '750',
    credit_reason: 'overpayment',
  });
});

test('paid after expiry, within the late watch: the order is delivered late', async () => {
  const { api, accountId, order, to } = await intentOrder('tron-late');
  await waitForOrderStatus(api, order.orderId, 'expired');
  await payOnTron(to, '50.00');
  const delivered = await waitForOrderStatus(api, order.orderId, 'delivered');
  expect(delivered.codes).toHaveLength(2);
  expect(await expectLedgerMatchesBalance(h, accountId)).toMatchObject({
    balance: '0.00',
    rows: [],
    spending: '50.00',
  });
}, 60_000);
