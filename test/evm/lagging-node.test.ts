import { evmCheckoutStateQuery, evmCheckoutWorkflowId } from '../../src/contracts/evm-checkouts-contract';
import { evmCheckout, evmScans } from '../../src/db/evm-store';
import { evmCheckoutStarter } from '../../src/temporal/starters';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { evmEnv, transfersOf, units6 } from '../helpers/evm-checkout';
import { startRpcProxy, type RpcProxy } from '../helpers/evm-proxy';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { call, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf } from '../helpers/payments';

// Issue 36 item 4, "a chain read you can trust": an RPC node that lacks a block has said nothing
// about it. The chain's two URLs are proxies in front of one real Hardhat node, so each can be
// down, or answer like a node behind a load balancer whose backends lag: the head of one backend,
// no block and no logs from another. Money is checked where it lives: balance and ledger.
let chain: DevChain;
let primary: RpcProxy;
let fallback: RpcProxy;
let h: Harness;

beforeAll(async () => {
  chain = await startDevChain();
  primary = await startRpcProxy(chain.rpcUrl);
  fallback = await startRpcProxy(chain.rpcUrl);
  // The first test starts with no node answering decimals().
  primary.fail('eth_call');
  fallback.fail('eth_call');
  h = await startHarness({
    ...evmEnv(chain, { confirmations: 2, rpcUrls: [primary.url, fallback.url] }),
    PAYMENT_WINDOW_SECONDS: '300',
  });
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await primary?.stop();
  await fallback?.stop();
  await chain?.stop();
});

async function topup(externalTopupId: string, amount: string) {
  const r = await reseller(h);
  const res = await r.api.post('/topup', { externalTopupId, amount, currency: 'USDT' });
  expect(res.status).toBe(200);
  const checkout = (await evmCheckout(h.services.orm.em.fork(), checkoutIdOf(res.body.checkoutUrl)))!;
  return { ...r, checkoutUrl: res.body.checkoutUrl as string, checkout };
}

const balanceOf = async (api: Awaited<ReturnType<typeof reseller>>['api']) =>
  (await api.get('/balance')).body.balance as string;

test("a chain whose tokens' decimals() cannot be read at start is degraded, named in /readyz, and credits nothing until they are read", async () => {
  const ready = await call(`${h.baseUrl}/readyz`);
  expect(ready.status).toBe(200);
  expect(ready.body).toMatchObject({
    ready: true,
    degraded: ['chain:31337'],
    chains: { 31337: { name: 'Hardhat', state: 'unverified' } },
  });

  const { api, accountId, checkout, checkoutUrl } = await topup('decimals-unread', '7.00');
  const watch = h.services.temporal.client.workflow.getHandle(
    evmCheckoutWorkflowId(checkout.reference, checkout.derivation_index),
  );
  await chain.pay(checkout.address, 'USDT', units6('7.00'));
  await chain.mine(3);
  // Two whole scans after the payment was deep enough, each skipping the chain as unavailable.
  const before = (await watch.query(evmCheckoutStateQuery)).scans;
  await eventually(async () => {
    const state = await watch.query(evmCheckoutStateQuery);
    return state.scans >= before + 2 && state.unavailable.includes(31337);
  });
  expect(await transfersOf(h, checkoutUrl)).toEqual([]);
  expect(await balanceOf(api)).toBe('0.00');

  primary.pass('eth_call');
  fallback.pass('eth_call');
  await eventually(async () => (await balanceOf(api)) === '7.00');
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '7.00' })]);
  await eventually(async () => ((await call(`${h.baseUrl}/readyz`)).body.degraded?.length === 0 ? true : undefined));
});

test('the primary down and the fallback lagging (no block, no logs) with a transfer at depth: it is not dropped, and is credited once the primary answers', async () => {
  const { api, accountId, checkout, checkoutUrl } = await topup('lagging-fallback', '9.00');
  fallback.answer('eth_getBlockByNumber', null);
  fallback.answer('eth_getLogs', []);
  let seen: Awaited<ReturnType<typeof transfersOf>>[number];
  try {
    await chain.pay(checkout.address, 'USDT', units6('9.00'));
    seen = await eventually(async () => (await transfersOf(h, checkoutUrl))[0]);
    primary.down = true;
    await chain.mine(4);
    // The fallback was asked about the transfer's block, again and again, and never had it.
    const asked = fallback.count('eth_getBlockByNumber');
    await eventually(async () => fallback.count('eth_getBlockByNumber') >= asked + 3);
    expect(await transfersOf(h, checkoutUrl)).toEqual([
      expect.objectContaining({ state: 'seen', block_hash: seen.block_hash, applied: null }),
    ]);
    expect(await balanceOf(api)).toBe('0.00');

    primary.down = false;
    await eventually(async () => (await balanceOf(api)) === '9.00');
  } finally {
    primary.down = false;
    fallback.pass('eth_getBlockByNumber');
    fallback.pass('eth_getLogs');
  }
  expect(await transfersOf(h, checkoutUrl)).toEqual([
    expect.objectContaining({ state: 'confirmed', applied: 'payment', block_hash: seen.block_hash }),
  ]);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '9.00' })]);
});

test("a transfer a lagging node left out of its logs, and that later scans' windows passed, is recorded and credited when its checkout closes", async () => {
  const { api, accountId, checkout, checkoutUrl } = await topup('missed-while-lagging', '6.00');
  primary.down = true;
  fallback.answer('eth_getLogs', []);
  try {
    await chain.pay(checkout.address, 'USDT', units6('6.00'));
    const paidIn = await chain.blockNumber();
    await chain.mine(5);
    // The scans went past it (further than its confirmations reach back) without listing it.
    await eventually(async () => {
      const [scan] = await evmScans(h.services.orm.em.fork(), checkout.id);
      return scan && BigInt(scan.scanned_to) - 2n > paidIn;
    });
  } finally {
    primary.down = false;
    fallback.pass('eth_getLogs');
  }
  const asked = primary.count('eth_getLogs') + fallback.count('eth_getLogs');
  await eventually(async () => primary.count('eth_getLogs') + fallback.count('eth_getLogs') >= asked + 2);
  expect(await transfersOf(h, checkoutUrl)).toEqual([]);

  // Its watch brought to its end now: a watch whose windows are over (the reconciler's restart of a
  // lost one) goes straight to its closing step, which reads the address again from its start block.
  const watchId = evmCheckoutWorkflowId(checkout.reference, checkout.derivation_index);
  await h.services.temporal.client.workflow.getHandle(watchId).terminate('the test ends its windows now');
  const over = { ...h.config, LATE_PAYMENT_WATCH_SECONDS: 0, EVM_ADDRESS_WATCH_SECONDS: 0 };
  await evmCheckoutStarter(h.services.temporal, over, {
    orderId: checkout.reference,
    depositIndex: checkout.derivation_index,
    expiresAt: Date.now(),
  }).start();
  expect(await h.services.temporal.client.workflow.getHandle(watchId).result()).toMatchObject({
    state: 'closed',
    lastError: null,
  });
  expect((await evmCheckout(h.services.orm.em.fork(), checkout.id))!.state).toBe('closed');
  expect(await transfersOf(h, checkoutUrl)).toEqual([
    expect.objectContaining({ state: 'confirmed', applied: 'excess', credit_reason: 'after_expiry' }),
  ]);
  expect(await balanceOf(api)).toBe('6.00');
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '6.00' })]);
});
