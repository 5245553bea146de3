import { createWalletClient, defineChain, erc20Abi, http, encodeFunctionData } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { evmCheckout } from '../../src/db/evm-store';
import { EvmCheckoutWatch } from '../../src/services/payments/evm-checkout-watch';
import { notifyPaid } from '../../src/temporal/payment-notices';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { depositAddressOf, evmEnv, transfersOf, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, waitForOrderStatus } from '../helpers/payments';

// Issue 25: the self-hosted USDT/USDC checkout on a real EVM node (Hardhat), paid with real
// ERC-20 transfers and watched by the real workflows on the Temporal server and Postgres. Money
// is checked where it lives: the order, the balance and the ledger.
let chain: DevChain;
let h: Harness;

beforeAll(async () => {
  chain = await startDevChain();
  h = await startHarness({
    ...evmEnv(chain, { confirmations: 2 }),
    PAYMENT_WINDOW_SECONDS: '300',
    EVM_ADDRESS_WATCH_SECONDS: '600',
    EVM_ADDRESS_POLL_SECONDS: '1',
  });
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await chain?.stop();
});

test('a token whose decimals() on chain differ from the configuration stops the start, naming it', async () => {
  const chains = JSON.parse(evmEnv(chain).EVM_CHAINS);
  chains[0].tokens.USDC.decimals = 18;
  await expect(startHarness({ ...evmEnv(chain), EVM_CHAINS: JSON.stringify(chains) })).rejects.toThrow(
    /EVM_CHAINS: USDC on Hardhat \(chain 31337\) has 6 decimals on chain, 18 configured/,
  );
});

async function intentOrder(externalOrderId: string, qty = 2) {
  const r = await reseller(h);
  const order = await r.api.post('/orders', {
    externalOrderId,
    productId: 'prod_chatgpt_team_1m',
    qty,
    payment: 'intent',
  });
  expect(order.status).toBe(200);
  expect(order.body.status).toBe('pending');
  return { ...r, order: order.body, address: await depositAddressOf(h, order.body.checkoutUrl) };
}

test('an exact payment delivers an intent order with its codes; the spending is recorded, the balance untouched', async () => {
  const { api, accountId, order, address } = await intentOrder('evm-exact');
  expect(order.amount).toBe('50.00');
  await chain.pay(address, 'USDT', units6('50.00'));
  await chain.mine(1);
  const delivered = await waitForOrderStatus(api, order.orderId, 'delivered');
  expect(delivered.codes).toHaveLength(2);
  expect(await transfersOf(h, order.checkoutUrl)).toEqual([
    expect.objectContaining({ state: 'confirmed', applied: 'payment', excess_cents: '0' }),
  ]);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money).toMatchObject({ balance: '0.00', rows: [], spending: '50.00' });
});

test('a top-up paid in USDC is credited once to the balance', async () => {
  const { api, accountId } = await reseller(h);
  const topup = await api.post('/topup', { externalTopupId: 'evm-top', amount: '15.25', currency: 'USDC' });
  expect(topup.status).toBe(200);
  await chain.pay(await depositAddressOf(h, topup.body.checkoutUrl), 'USDC', units6('15.25'));
  await chain.mine(1);
  await eventually(async () => (await api.get('/balance')).body.balance === '15.25');
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '15.25' })]);
});

test('a partial payment leaves the order pending showing what is missing; the rest in a second transfer pays it once', async () => {
  const { api, accountId, order, address } = await intentOrder('evm-partial');
  await chain.pay(address, 'USDT', units6('20.00'));
  await chain.mine(1);
  const partly = await eventually(async () => {
    const res = await api.get(`/orders/${order.orderId}`);
    return res.body.amountReceived === '20.00' ? res.body : undefined;
  });
  expect(partly).toMatchObject({ status: 'pending', amountMissing: '30.00', codes: [] });
  const page = await fetch(`${h.baseUrl}/checkout/${checkoutIdOf(order.checkoutUrl)}/status.json`).then((r) =>
    r.json(),
  );
  expect(page).toMatchObject({ status: 'partly_paid', received: '20.00', missing: '30.00' });

  await chain.pay(address, 'USDC', units6('30.00'));
  await chain.mine(1);
  const delivered = await waitForOrderStatus(api, order.orderId, 'delivered');
  expect(delivered.codes).toHaveLength(2);
  expect(delivered.amountReceived).toBeUndefined();
  const transfers = await transfersOf(h, order.checkoutUrl);
  expect(transfers.map((t) => [t.token, t.applied, t.excess_cents])).toEqual([
    ['USDT', 'payment', '0'],
    ['USDC', 'payment', '0'],
  ]);
  expect(await expectLedgerMatchesBalance(h, accountId)).toMatchObject({ balance: '0.00', rows: [] });
});

test('an overpayment pays the order and credits the excess to the balance as its own ledger entry', async () => {
  const { api, accountId, order, address } = await intentOrder('evm-over');
  await chain.pay(address, 'USDT', units6('57.50'));
  await chain.mine(1);
  await waitForOrderStatus(api, order.orderId, 'delivered');
  const money = await eventually(async () => {
    const m = await expectLedgerMatchesBalance(h, accountId);
    return m.rows.length === 1 ? m : undefined;
  });
  expect(money).toMatchObject({ balance: '7.50', rows: [{ type: 'topup', amount: '7.50', order_id: order.orderId }] });
  const [transfer] = await transfersOf(h, order.checkoutUrl);
  expect(transfer).toMatchObject({ applied: 'payment', excess_cents: '750', credit_reason: 'overpayment' });
});

test('a second payment to a spent address is credited to the balance once, and the order is not paid twice', async () => {
  const { api, accountId, order, address } = await intentOrder('evm-again');
  await chain.pay(address, 'USDT', units6('50.00'));
  await chain.mine(1);
  await waitForOrderStatus(api, order.orderId, 'delivered');
  await chain.pay(address, 'USDT', units6('12.00'));
  await chain.mine(1);
  await eventually(async () => (await api.get('/balance')).body.balance === '12.00');
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '12.00', order_id: order.orderId })]);
  expect((await transfersOf(h, order.checkoutUrl)).map((t) => [t.applied, t.credit_reason])).toEqual([
    ['payment', null],
    ['excess', 'address_reused'],
  ]);
  expect((await api.get(`/orders/${order.orderId}`)).body.codes).toHaveLength(2);

  // The operator sees it: excess credited by reason, transfers by chain, checkouts by state.
  const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
  expect(metrics).toMatch(
    /wholesale_evm_excess_credited_cents_total\{reason="address_reused",service="wholesale"\} [1-9]\d*/,
  );
  expect(metrics).toMatch(
    /wholesale_evm_transfers_credited_total\{chain="31337",token="USDT",service="wholesale"\} [1-9]/,
  );
  expect(metrics).toMatch(/wholesale_evm_checkouts\{state="paid",service="wholesale"\} [1-9]/);
});

test('the same transfer seen again (scans and settlements repeated, as a retried activity or a second worker would) is counted once', async () => {
  const { api, accountId } = await reseller(h);
  const topup = await api.post('/topup', { externalTopupId: 'evm-again-seen', amount: '9.00', currency: 'USDT' });
  const address = await depositAddressOf(h, topup.body.checkoutUrl);
  await chain.pay(address, 'USDT', units6('10.00'));
  await chain.mine(2);
  await eventually(async () => (await api.get('/balance')).body.balance === '10.00');
  // What a retried activity, a replayed watch or a second worker would do: scan and settle again.
  const id = (await evmCheckout(h.services.orm.em.fork(), checkoutIdOf(topup.body.checkoutUrl)))!.derivation_index;
  const evm = new EvmCheckoutWatch({
    orm: h.services.orm,
    config: h.config,
    temporal: h.services.temporal,
    evm: h.services.providers.evm!,
    notifyPaid: (order) => notifyPaid(h.services.temporal, h.config, order),
  });
  for (let i = 0; i < 3; i++) {
    await evm.scanChain(chain.chainId);
    await evm.settle(id, 'open');
    await evm.settle(id, 'after');
  }
  expect(await transfersOf(h, topup.body.checkoutUrl)).toHaveLength(1);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money).toMatchObject({ balance: '10.00' });
  // The excess is written with the transfer's allocation, the top-up's credit when its workflow settles.
  expect(money.rows.map((r) => r.amount).sort()).toEqual(['1.00', '9.00']);
});

test('a reorg that removes a transfer before its confirmations credits nothing; the same transaction re-mined is credited once', async () => {
  const { api, accountId } = await reseller(h);
  const topup = await api.post('/topup', { externalTopupId: 'evm-reorg', amount: '5.00', currency: 'USDT' });
  const address = await depositAddressOf(h, topup.body.checkoutUrl);
  // One signed transaction, sent on the chain that will be abandoned and again on the new one.
  const account = privateKeyToAccount(chain.payer.privateKey);
  const wallet = createWalletClient({
    account,
    chain: defineChain({
      id: chain.chainId,
      name: 'dev',
      nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    }),
    transport: http(chain.rpcUrl),
  });
  const request = await wallet.prepareTransactionRequest({
    to: chain.tokens.USDT.address,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [address, units6('5.00')] }),
  });
  const raw = await wallet.signTransaction(request);

  const fork = await chain.snapshot();
  const hash = await wallet.sendRawTransaction({ serializedTransaction: raw });
  const seen = await eventually(async () => {
    const rows = await transfersOf(h, topup.body.checkoutUrl);
    return rows.length === 1 ? rows[0] : undefined;
  });
  expect(seen).toMatchObject({ tx_hash: hash, state: 'seen', applied: null });
  // The block that held it is replaced by two empty ones: the watch's rescan no longer finds it.
  await chain.revert(fork);
  await chain.mine(3);
  await eventually(async () => (await transfersOf(h, topup.body.checkoutUrl))[0].state === 'dropped');
  expect((await api.get('/balance')).body.balance).toBe('0.00');

  expect(await wallet.sendRawTransaction({ serializedTransaction: raw })).toBe(hash);
  await chain.mine(1);
  await eventually(async () => (await api.get('/balance')).body.balance === '5.00');
  const [row] = await transfersOf(h, topup.body.checkoutUrl);
  expect(row).toMatchObject({ tx_hash: hash, state: 'confirmed', applied: 'payment' });
  expect(row.block_hash).not.toBe(seen.block_hash);
  expect((await expectLedgerMatchesBalance(h, accountId)).rows).toHaveLength(1);
});
