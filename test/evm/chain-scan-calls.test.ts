import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ChainRpc, ChainUnavailableError } from '../../src/providers/evm/rpc';
import type { ChainSettings } from '../../src/providers/evm/evm-settings';
import { startTronJsonRpc, TRON_MAINNET_CHAIN_ID, type TronJsonRpc } from '../fakes/tron-jsonrpc';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { units6 } from '../helpers/evm-checkout';

// Issue 38: one read of a block range for every open deposit address, in chunks: N addresses cost
// ceil(N / perCall) eth_getLogs per range (all tokens in one call), counted at the node (the
// java-tron fake, which also holds the documented cap of 1,000 entries per topic slot), instead of
// N. The size comes from CHAIN_SCAN_TEST_ADDRESSES (1,000 by default: no database, a few seconds).
const ADDRESSES = Number(process.env.CHAIN_SCAN_TEST_ADDRESSES ?? 1000);
const PER_CALL = 500;
let chain: DevChain;
let tron: TronJsonRpc;
let rpc: ChainRpc;

beforeAll(async () => {
  chain = await startDevChain();
  tron = await startTronJsonRpc(chain.rpcUrl);
  const settings: ChainSettings = {
    kind: 'tron',
    chainId: TRON_MAINNET_CHAIN_ID,
    name: 'TRON',
    rpcUrls: [tron.url],
    finality: 'finalized',
    tokens: { USDT: { address: chain.tokens.USDT.address.toLowerCase() as `0x${string}`, decimals: 6 } },
  };
  rpc = new ChainRpc(settings, { timeoutMs: 5000, headStallSeconds: 600, logRangeBlocks: 5000 });
}, 120_000);
afterAll(async () => {
  await tron?.stop();
  await chain?.stop();
});

const fresh = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as `0x${string}`;

test(`${ADDRESSES} open addresses: one range read in ceil(${ADDRESSES}/${PER_CALL}) eth_getLogs calls, every transfer to any of them found, none to others`, async () => {
  const watched = Array.from({ length: ADDRESSES }, fresh);
  const from = (await chain.blockNumber()) + 1n;
  const paid = [watched[0], watched[Math.floor(ADDRESSES / 2)], watched[ADDRESSES - 1]];
  for (const [i, to] of paid.entries()) await chain.pay(to, 'USDT', units6(`${i + 1}.00`));
  await chain.pay(fresh(), 'USDT', units6('9.00'));
  await chain.mine(1);
  const head = await chain.blockNumber();

  tron.resetCounts();
  const seen = await rpc.read((node) => node.transfersToAny(watched, from, head, PER_CALL));
  expect(tron.count('eth_getLogs')).toBe(Math.ceil(ADDRESSES / PER_CALL));
  expect(seen.map((t) => [t.to, t.units]).sort()).toEqual(paid.map((to, i) => [to, units6(`${i + 1}.00`)]).sort());

  // The same read one address at a time, as one watch per checkout did: N calls.
  tron.resetCounts();
  const sample = watched.slice(0, 20);
  for (const to of sample) await rpc.read((node) => node.transfersTo(to, from, head));
  expect(tron.count('eth_getLogs')).toBe(sample.length);
});

test("a chunk past the node's cap on one topic slot (java-tron: 1,000) is refused by the node, and the read fails rather than missing anything", async () => {
  const watched = Array.from({ length: 1001 }, fresh);
  const head = await chain.blockNumber();
  await expect(rpc.read((node) => node.transfersToAny(watched, head, head, 1001))).rejects.toBeInstanceOf(
    ChainUnavailableError,
  );
});
