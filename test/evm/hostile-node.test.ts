import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeAbiParameters, encodeEventTopics, pad } from 'viem';
import { TRANSFER_EVENT } from '../../src/providers/evm/node';
import { ChainRpc } from '../../src/providers/evm/rpc';
import type { ChainSettings } from '../../src/providers/evm/evm-settings';
import { registry } from '../../src/metrics/registry';

// Issue 25: nothing a node answers can credit anything or crash the worker. A JSON-RPC node on
// loopback answers what the test scripts (garbage, a huge log list, transfers of another token,
// a log with the wrong topic or recipient, a removed log); the chain client keeps only transfers
// of the configured tokens to the watched address, and a node that answers garbage is passed over
// for the next one.
const USDT = `0x${'11'.repeat(20)}` as const;
const OTHER_TOKEN = `0x${'22'.repeat(20)}` as const;
const DEPOSIT = `0x${'33'.repeat(20)}` as const;
const SOMEONE = `0x${'44'.repeat(20)}` as const;
const TRANSFER_TOPIC = encodeEventTopics({ abi: [TRANSFER_EVENT], eventName: 'Transfer' })[0];

type Answer = (method: string, params: unknown[]) => unknown;
const servers: Server[] = [];

/** A node on loopback answering `answer`, on chain 999 (the chain these tests configure) unless told another. */
async function node(answer: Answer | 'garbage', chainId = 999, calls: string[] = []): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (answer === 'garbage') return void res.end('{"jsonrpc":"2.0","id":1,"result":');
      const call = JSON.parse(body) as { id: number; method: string; params: unknown[] };
      calls.push(call.method);
      res.setHeader('content-type', 'application/json');
      const result = call.method === 'eth_chainId' ? `0x${chainId.toString(16)}` : answer(call.method, call.params);
      res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result }));
    });
  });
  servers.push(server);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
function log(
  over: Partial<{
    address: string;
    topics: string[];
    data: string;
    removed: boolean;
    blockNumber: string;
    logIndex: string;
  }> = {},
) {
  return {
    address: USDT,
    topics: [TRANSFER_TOPIC, pad(SOMEONE), pad(DEPOSIT)],
    data: encodeAbiParameters([{ type: 'uint256' }], [5_000_000n]),
    blockNumber: '0x5',
    blockHash: hash(5),
    transactionHash: hash(0xabc),
    transactionIndex: '0x0',
    logIndex: '0x0',
    removed: false,
    ...over,
  };
}

function chain(rpcUrls: string[]): ChainSettings {
  return { chainId: 999, name: 'Hostile', rpcUrls, confirmations: 1, tokens: { USDT: { address: USDT, decimals: 6 } } };
}

// No test here is about a slow node, and on two busy cores building and reading a 2,000-log answer
// has taken over a second: the call timeout leaves room for that.
const rpc = (urls: string[]) =>
  new ChainRpc(chain(urls), { timeoutMs: 10_000, headStallSeconds: 60, logRangeBlocks: 1000 });

test('only transfers of a configured token to the watched address are kept, whatever else the node lists', async () => {
  const hostile = await node((method) => {
    if (method === 'eth_blockNumber') return '0x10';
    if (method !== 'eth_getLogs') return null;
    return [
      log({ logIndex: '0x0' }),
      log({ address: OTHER_TOKEN, logIndex: '0x1' }),
      log({ topics: [hash(1), pad(SOMEONE), pad(DEPOSIT)], logIndex: '0x2' }),
      log({ topics: [TRANSFER_TOPIC, pad(DEPOSIT), pad(SOMEONE)], logIndex: '0x3' }),
      log({ removed: true, logIndex: '0x4' }),
      log({ blockNumber: '0x99', logIndex: '0x5' }),
      log({ data: '0x', logIndex: '0x6' }),
      // A long list of someone else's transfers.
      ...Array.from({ length: 2_000 }, (_, i) =>
        log({ topics: [TRANSFER_TOPIC, pad(SOMEONE), pad(SOMEONE)], logIndex: `0x${(i + 100).toString(16)}` }),
      ),
    ];
  });
  const kept = await rpc([hostile]).read((n) => n.transfersTo(DEPOSIT, 1n, 16n));
  expect(kept).toEqual([expect.objectContaining({ token: 'USDT', units: 5_000_000n, logIndex: 0, blockNumber: 5n })]);
  const errors = await registry.getSingleMetric('wholesale_evm_rpc_errors_total')!.get();
  expect(errors.values.some((v) => v.labels.chain === '999' && v.labels.kind === 'invalid')).toBe(true);
});

test("an answer too large to be a deposit address's logs (over 10 MB) is refused as a failed call, never read into memory whole", async () => {
  const flood = await node((method) =>
    method === 'eth_getLogs'
      ? Array.from({ length: 20_000 }, (_, i) => log({ logIndex: `0x${i.toString(16)}` }))
      : '0x10',
  );
  await expect(rpc([flood]).read((n) => n.transfersTo(DEPOSIT, 1n, 16n))).rejects.toMatchObject({
    name: 'ChainUnavailableError',
  });
});

test('a node answering garbage is passed over for the next; when every node fails the chain is unavailable, not a crash', async () => {
  const garbage = await node('garbage');
  const good = await node((method) =>
    method === 'eth_blockNumber' ? '0x10' : method === 'eth_getLogs' ? [log()] : null,
  );
  const failover = rpc([garbage, 'http://127.0.0.1:9/', good]);
  expect(await failover.head()).toBe(16n);
  expect(await failover.read((n) => n.transfersTo(DEPOSIT, 1n, 16n))).toHaveLength(1);
  expect(failover.health).toBe('up');

  const dead = rpc([garbage, 'http://127.0.0.1:9/']);
  await expect(dead.head()).rejects.toMatchObject({ name: 'ChainUnavailableError' });
  await expect(dead.read((n) => n.transfersTo(DEPOSIT, 1n, 2n))).rejects.toMatchObject({
    name: 'ChainUnavailableError',
  });
  expect(dead.health).toBe('down');
  // The error names the chain, never a node's URL (it holds the provider's key).
  await expect(dead.head()).rejects.toThrow(/^Hostile \(chain 999\): no JSON-RPC node answered/);
  await dead.head().catch((err: Error) => expect(err.message).not.toContain('127.0.0.1'));
});

test('a node whose head stops moving is lagging: the next node is asked, and with none left the chain says so', async () => {
  let now = 0;
  let head = 16;
  const stuck = await node((method) => (method === 'eth_blockNumber' ? '0x10' : null));
  const moving = await node((method) => (method === 'eth_blockNumber' ? `0x${head.toString(16)}` : null));
  const lagging = new ChainRpc(
    chain([stuck, moving]),
    { timeoutMs: 1000, headStallSeconds: 60, logRangeBlocks: 1000 },
    { now: () => now },
  );
  expect(await lagging.head()).toBe(16n);
  now = 120_000;
  head = 20;
  expect(await lagging.head()).toBe(20n);
  expect(lagging.health).toBe('up');

  const alone = new ChainRpc(
    chain([stuck]),
    { timeoutMs: 1000, headStallSeconds: 60, logRangeBlocks: 1000 },
    { now: () => now },
  );
  now = 0;
  await alone.head();
  now = 120_000;
  expect(await alone.head()).toBe(16n);
  expect(alone.health).toBe('lagging');
});

test('a node on another chain never serves: refused when a read fails over to it, and the error names no URL', async () => {
  const otherChain = await node(
    (method) => (method === 'eth_blockNumber' ? '0x10' : method === 'eth_getLogs' ? [log()] : null),
    1,
  );
  const refusing = rpc(['http://127.0.0.1:9/', otherChain]);
  const failure = await refusing.read((n) => n.transfersTo(DEPOSIT, 1n, 16n)).catch((err: Error) => err);
  expect(failure).toMatchObject({
    name: 'ChainUnavailableError',
    message: 'Hostile (chain 999): no JSON-RPC node answered (wrong_chain)',
  });
  expect((failure as Error).message).not.toContain('127.0.0.1');
  const errors = await registry.getSingleMetric('wholesale_evm_rpc_errors_total')!.get();
  expect(
    errors.values.find((v) => v.labels.chain === '999' && v.labels.kind === 'wrong_chain')?.value,
  ).toBeGreaterThanOrEqual(1);
});

test('each change of node asks the new one for its chain id first; the node that served last is not asked again', async () => {
  const down = { primary: false, fallback: false };
  const primaryCalls: string[] = [];
  const fallbackCalls: string[] = [];
  const answer = (which: keyof typeof down) => (method: string) =>
    method === 'eth_blockNumber' ? (down[which] ? undefined : '0x10') : null;
  const primary = await node(answer('primary'), 999, primaryCalls);
  const fallback = await node(answer('fallback'), 999, fallbackCalls);
  const chainIdAsked = (calls: string[]) => calls.filter((m) => m === 'eth_chainId').length;
  const failover = rpc([primary, fallback]);
  await failover.head();
  await failover.head();
  expect([chainIdAsked(primaryCalls), chainIdAsked(fallbackCalls)]).toEqual([1, 0]);
  down.primary = true;
  await failover.head();
  await failover.head();
  expect([chainIdAsked(primaryCalls), chainIdAsked(fallbackCalls)]).toEqual([1, 1]);
  down.primary = false;
  down.fallback = true;
  await failover.head();
  expect([chainIdAsked(primaryCalls), chainIdAsked(fallbackCalls)]).toEqual([2, 1]);
});
