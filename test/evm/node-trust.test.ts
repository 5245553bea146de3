import { evmCheckout } from '../../src/db/evm-store';
import { evmChainSetting, startDevChain, type DevChain } from '../helpers/evm-chain';
import { transfersOf, units6 } from '../helpers/evm-checkout';
import { startRpcProxy, type RpcProxy } from '../helpers/evm-proxy';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV, checkoutIdOf } from '../helpers/payments';

// Issue 36 item 4: an RPC node is one witness. Each URL must be on the configured chain (checked
// at start, named by its place in EVM_CHAINS and never by its text: URLs hold keys), and a chain
// with `verifyWith` credits a transfer only when that second node shows the same receipt and
// block. Three real Hardhat nodes: `paid` (chain 31337, where payers pay), `liar` (chain 31337 as
// well, its own history, without the payer's transfers) and `final` (chain 4242, read by finality,
// its honest witness a second URL to it).
let paid: DevChain;
let liar: DevChain;
let final: DevChain;
let witness: RpcProxy;
let h: Harness;

const env = (chains: unknown[]) => ({
  ...PAYMENT_ENV,
  PAYMENT_PROVIDER: 'evm',
  EVM_CHAINS: JSON.stringify(chains),
  EVM_RPC_TIMEOUT_MS: '1500',
  PAYMENT_WINDOW_SECONDS: '300',
});

beforeAll(async () => {
  [paid, liar, final] = await Promise.all([startDevChain(), startDevChain(), startDevChain({ chainId: 4242 })]);
  // Past every block the payments land in, so the liar answers for them rather than "not yet".
  await liar.mine(10_000);
  witness = await startRpcProxy(final.rpcUrl);
  h = await startHarness(
    env([
      evmChainSetting(paid, { confirmations: 1, verifyWith: liar.rpcUrl }),
      evmChainSetting(final, { name: 'Final', finality: 'finalized', verifyWith: witness.url }),
    ]),
  );
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await witness?.stop();
  await Promise.all([paid?.stop(), liar?.stop(), final?.stop()]);
});

test.each([
  [
    'an RPC URL',
    () => evmChainSetting(paid, { rpcUrls: [paid.rpcUrl, final.rpcUrl] }),
    /EVM_CHAINS\[0\]\.rpcUrls\[1\]: answers chain 4242, not 31337 as configured/,
  ],
  [
    'a verifyWith',
    () => evmChainSetting(paid, { verifyWith: final.rpcUrl }),
    /EVM_CHAINS\[0\]\.verifyWith: answers chain 4242, not 31337 as configured/,
  ],
])(
  '%s on another chain stops the start, named by its place in EVM_CHAINS, never by its URL',
  async (_case, setting, message) => {
    const failure = await startHarness(env([setting()])).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failure?.message).toMatch(message);
    expect(failure?.message).not.toContain(final.rpcUrl.replace('http://', ''));
  },
);

async function metricValue(name: string, chainId: number): Promise<number> {
  const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{chain="${chainId}"`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function topup(externalTopupId: string, amount: string) {
  const r = await reseller(h);
  const res = await r.api.post('/topup', { externalTopupId, amount, currency: 'USDT' });
  expect(res.status).toBe(200);
  const checkout = (await evmCheckout(h.services.orm.em.fork(), checkoutIdOf(res.body.checkoutUrl)))!;
  return { ...r, checkoutUrl: res.body.checkoutUrl as string, checkout };
}

test('a transfer its verifyWith node does not show stays unconfirmed: the checkout unpaid, nothing credited, the disagreement counted', async () => {
  const { api, accountId, checkout, checkoutUrl } = await topup('witness-disagrees', '8.00');
  const before = await metricValue('wholesale_evm_verify_disagreements_total', 31337);
  await paid.pay(checkout.address, 'USDT', units6('8.00'));
  await paid.mine(3);
  // Asked at every scan once deep enough, and every time the liar has no such receipt.
  await eventually(async () => (await metricValue('wholesale_evm_verify_disagreements_total', 31337)) >= before + 2);
  expect(await transfersOf(h, checkoutUrl)).toEqual([expect.objectContaining({ state: 'seen', applied: null })]);
  expect((await evmCheckout(h.services.orm.em.fork(), checkout.id))!.paid_at).toBeNull();
  expect(await (await fetch(`${checkoutUrl}/status.json`)).json()).toMatchObject({
    status: 'confirming',
    received: '0.00',
  });
  expect((await api.get('/balance')).body.balance).toBe('0.00');
  expect((await expectLedgerMatchesBalance(h, accountId)).rows).toEqual([]);
});

test('a transfer its verifyWith node shows the same is credited once, on a chain read by its finalized block', async () => {
  const { api, accountId, checkoutUrl, checkout } = await topup('witness-agrees', '11.00');
  const receiptsAsked = witness.count('eth_getTransactionReceipt');
  await final.pay(checkout.address, 'USDT', units6('11.00'));
  await eventually(async () => (await api.get('/balance')).body.balance === '11.00');
  expect(witness.count('eth_getTransactionReceipt')).toBeGreaterThan(receiptsAsked);
  expect(await transfersOf(h, checkoutUrl)).toEqual([
    expect.objectContaining({ chain_id: 4242, state: 'confirmed', applied: 'payment' }),
  ]);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '11.00' })]);
  expect(await metricValue('wholesale_evm_verify_disagreements_total', 4242)).toBe(0);
});
