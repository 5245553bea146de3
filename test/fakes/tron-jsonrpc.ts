// A contract fake of java-tron's Ethereum-compatible JSON-RPC (a FullNode's port 8545, TronGrid's
// …/jsonrpc), written from its documentation (tronprotocol/documentation-en, docs/api/json-rpc/:
// node/eth_chainId, block-and-tx-query/eth_getBlockByNumber, filter/eth_getLogs) and standing in
// front of a real Hardhat node that holds the blocks and the token, so the transfers are real.
// What it adds is what a TRON node does differently from an Ethereum one:
// - eth_chainId answers mainnet's 0x2b6653dc;
// - `finalized` is the latest solidified block (here head - solidifiedDepth, 19 by default: 2/3 of
//   27 super representatives); `pending` and `safe` are refused (-32602 "TAG pending not supported");
// - eth_getLogs takes hex addresses only (20 bytes, or 21 starting with 41), never T…, and refuses
//   what java-tron refuses, with its messages: fromBlock > toBlock, a range past maxBlockRange
//   (default 5000), more than maxAddressSize addresses (1000), more than 4 topic slots, a slot
//   with more than maxSubTopics entries (1000), blockHash with fromBlock/toBlock, malformed hex.
// It counts calls per method (tests and the bench read them) and keeps the TRON-PRO-API-KEY
// header each call came with.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TRON_MAINNET_CHAIN_ID = 0x2b6653dc;

export interface TronJsonRpcOptions {
  solidifiedDepth?: number;
  maxBlockRange?: number;
  maxAddressSize?: number;
  maxSubTopics?: number;
}

export interface TronJsonRpc {
  url: string;
  /** Calls of `method` received so far (answered or refused). */
  count(method: string): number;
  /** The TRON-PRO-API-KEY header of every call so far, in order (undefined when absent). */
  apiKeys: (string | undefined)[];
  resetCounts(): void;
  stop(): Promise<void>;
}

/** A refusal as java-tron words it: JSON-RPC error -32602 (invalid params) with its message. */
class Refused extends Error {
  constructor(
    message: string,
    readonly code = -32602,
  ) {
    super(message);
  }
}

const QUANTITY = /^0x[0-9a-fA-F]{1,16}$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^(0x)?(41)?([0-9a-fA-F]{40})$/;

export async function startTronJsonRpc(target: string, opts: TronJsonRpcOptions = {}): Promise<TronJsonRpc> {
  const depth = BigInt(opts.solidifiedDepth ?? 19);
  const maxBlockRange = BigInt(opts.maxBlockRange ?? 5000);
  const maxAddressSize = opts.maxAddressSize ?? 1000;
  const maxSubTopics = opts.maxSubTopics ?? 1000;
  const counts = new Map<string, number>();
  const apiKeys: (string | undefined)[] = [];

  const forward = async (method: string, params: unknown[]): Promise<unknown> => {
    const answer = (await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    }).then((r) => r.json())) as { result?: unknown; error?: { code: number; message: string } };
    if (answer.error) throw new Refused(answer.error.message, answer.error.code);
    return answer.result;
  };
  const head = async () => BigInt((await forward('eth_blockNumber', [])) as string);
  const solidified = async () => {
    const h = await head();
    return h > depth ? h - depth : 0n;
  };

  /** A block tag or height as java-tron reads it, to a height (`earliest` 0, `finalized` solidified). */
  const height = async (tag: unknown, fallback: 'latest'): Promise<bigint> => {
    const value = tag ?? fallback;
    if (value === 'pending' || value === 'safe') throw new Refused(`TAG ${value} not supported`);
    if (value === 'latest') return head();
    if (value === 'earliest') return 0n;
    if (value === 'finalized') return solidified();
    if (typeof value === 'string' && QUANTITY.test(value)) return BigInt(value);
    throw new Refused('invalid block number');
  };

  const hex20 = (value: unknown, index: number): string => {
    const m = typeof value === 'string' ? ADDRESS.exec(value) : null;
    if (!m || (m[1] === undefined && m[2] === undefined))
      throw new Refused(`invalid address at index ${index}: ${String(value)}`);
    return `0x${m[3].toLowerCase()}`;
  };

  const getLogs = async (filter: Record<string, unknown>): Promise<unknown> => {
    const out: Record<string, unknown> = {};
    if (filter.blockHash !== undefined) {
      if (filter.fromBlock !== undefined || filter.toBlock !== undefined)
        throw new Refused('cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other');
      if (typeof filter.blockHash !== 'string' || !HASH.test(filter.blockHash)) throw new Refused('invalid hash value');
      out.blockHash = filter.blockHash;
    } else {
      const from = await height(filter.fromBlock, 'latest');
      const to = await height(filter.toBlock, 'latest');
      if (from > to) throw new Refused('please verify: fromBlock <= toBlock');
      if (to - from > maxBlockRange) throw new Refused(`exceed max block range: ${maxBlockRange}`);
      out.fromBlock = `0x${from.toString(16)}`;
      out.toBlock = `0x${to.toString(16)}`;
    }
    if (filter.address !== undefined && filter.address !== null) {
      const list = Array.isArray(filter.address) ? filter.address : [filter.address];
      if (list.length > maxAddressSize) throw new Refused(`exceed max addresses: ${maxAddressSize}`);
      out.address = list.map(hex20);
    }
    if (filter.topics !== undefined && filter.topics !== null) {
      if (!Array.isArray(filter.topics)) throw new Refused('invalid topic(s)');
      if (filter.topics.length > 4) throw new Refused('topics size should be <= 4');
      out.topics = filter.topics.map((slot: unknown) => {
        if (slot === null) return null;
        const list = Array.isArray(slot) ? slot : [slot];
        if (list.length > maxSubTopics) throw new Refused(`exceed max topics: ${maxSubTopics}`);
        for (const t of list)
          if (typeof t !== 'string' || !HASH.test(t)) throw new Refused(`invalid topic(s): ${String(t)}`);
        return slot;
      });
    }
    return forward('eth_getLogs', [out]);
  };

  const answer = async (method: string, params: unknown[]): Promise<unknown> => {
    switch (method) {
      case 'eth_chainId':
        return `0x${TRON_MAINNET_CHAIN_ID.toString(16)}`;
      case 'eth_getBlockByNumber':
        return forward(method, [`0x${(await height(params[0], 'latest')).toString(16)}`, params[1] ?? false]);
      case 'eth_getLogs':
        return getLogs((params[0] ?? {}) as Record<string, unknown>);
      case 'eth_blockNumber':
      case 'eth_call':
      case 'eth_getBlockByHash':
      case 'eth_getTransactionReceipt':
      case 'eth_getTransactionByHash':
      case 'net_version':
        return forward(method, params);
      default:
        // Methods java-tron does not serve on this port (eth_sendRawTransaction, debug_*, …).
        throw new Refused(`the method ${method} does not exist/is not available`, -32601);
    }
  };

  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      void (async () => {
        res.setHeader('content-type', 'application/json');
        let call: { id: unknown; method: string; params?: unknown[] };
        try {
          call = JSON.parse(body);
        } catch {
          return void res.end(
            JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'JSON parse error' } }),
          );
        }
        counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
        apiKeys.push(req.headers['tron-pro-api-key'] as string | undefined);
        try {
          const result = await answer(call.method, call.params ?? []);
          res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result }));
        } catch (err) {
          const code = err instanceof Refused ? err.code : -32000;
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: call.id,
              error: { code, message: (err as Error).message, data: '{}' },
            }),
          );
        }
      })();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jsonrpc`,
    count: (method) => counts.get(method) ?? 0,
    apiKeys,
    resetCounts: () => counts.clear(),
    stop: () => {
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      server.closeAllConnections();
      return closed;
    },
  };
}
