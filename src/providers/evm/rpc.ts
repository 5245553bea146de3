import { createPublicClient, decodeEventLog, encodeEventTopics, http, pad, parseAbiItem, toHex, type PublicClient } from 'viem';
import { z } from 'zod';
import { evmRpcErrors } from '../../metrics/registry';
import type { ChainSettings, TokenSymbol } from './settings';

// One chain's JSON-RPC nodes, asked in the operator's order: a node that fails, times out,
// answers garbage or whose head stops moving is passed over for the next, and the one that
// answered last is asked first next time. Errors never carry a node's URL (it holds a key).

export const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const TRANSFER_TOPIC = encodeEventTopics({ abi: [TRANSFER_EVENT], eventName: 'Transfer' })[0];
const DECIMALS_ABI = [{ type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] }] as const;

export class ChainUnavailableError extends Error {
  constructor(chain: ChainSettings, reason: string) {
    super(`${chain.name} (chain ${chain.chainId}): no JSON-RPC node answered (${reason})`);
    this.name = 'ChainUnavailableError';
  }
}

/** A token transfer to a watched address, as a node reported it. */
export interface ObservedTransfer {
  token: TokenSymbol;
  to: `0x${string}`;
  units: bigint;
  blockNumber: bigint;
  blockHash: `0x${string}`;
  txHash: `0x${string}`;
  logIndex: number;
}

interface Node {
  client: PublicClient;
  head?: bigint;
  /** When this node's head was last seen to move (ms). */
  headMovedAt?: number;
}

export type ChainHealth = 'up' | 'down' | 'lagging';

export interface RpcOptions {
  timeoutMs: number;
  headStallSeconds: number;
  logRangeBlocks: number;
}

const errorKind = (err: unknown): string => {
  const name = (err as Error)?.name ?? '';
  if (name.includes('Timeout')) return 'timeout';
  if (name.includes('HttpRequest')) return 'http';
  if (name.includes('Rpc') || name.includes('LimitExceeded')) return 'rpc';
  return 'invalid';
};

export class ChainRpc {
  private readonly nodes: Node[];
  private preferred = 0;
  private readonly label: string;
  /** How the last call went, for /readyz. */
  health: ChainHealth = 'up';

  constructor(
    readonly chain: ChainSettings,
    private readonly opts: RpcOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.label = String(chain.chainId);
    this.nodes = chain.rpcUrls.map((url) => ({
      // Failover and backoff are ours (the next node, the workflow's next sync), not the transport's.
      client: createPublicClient({ transport: http(url, { timeout: opts.timeoutMs, retryCount: 0 }) }) as PublicClient,
    }));
  }

  /** `fn` on the first node that answers, starting with the one that answered last. */
  private async call<T>(fn: (client: PublicClient, node: Node) => Promise<T>): Promise<T> {
    let lastKind = 'none';
    for (let i = 0; i < this.nodes.length; i++) {
      const index = (this.preferred + i) % this.nodes.length;
      const node = this.nodes[index];
      try {
        const result = await fn(node.client, node);
        this.preferred = index;
        this.health = 'up';
        return result;
      } catch (err) {
        lastKind = err instanceof LaggingNodeError ? 'lagging' : errorKind(err);
        evmRpcErrors.inc({ chain: this.label, kind: lastKind });
      }
    }
    this.health = lastKind === 'lagging' ? 'lagging' : 'down';
    throw new ChainUnavailableError(this.chain, lastKind);
  }

  /**
   * The head block number, from a node whose head has moved within EVM_HEAD_STALL_SECONDS. When
   * every node that answers is stalled (a quiet chain, or all of them behind), the highest head
   * among them is used and the chain reports itself lagging.
   */
  async head(): Promise<bigint> {
    let stalled: bigint | undefined;
    try {
      return await this.call(async (client, node) => {
        const head = await client.getBlockNumber({ cacheTime: 0 });
        if (!this.moved(node, head)) {
          stalled = stalled === undefined || head > stalled ? head : stalled;
          throw new LaggingNodeError();
        }
        return head;
      });
    } catch (err) {
      if (stalled === undefined) throw err;
      this.health = 'lagging';
      return stalled;
    }
  }

  /** Records `head` for `node`; false when it has not moved for EVM_HEAD_STALL_SECONDS. */
  private moved(node: Node, head: bigint): boolean {
    const now = this.now();
    if (node.head === undefined || head > node.head) {
      node.head = head;
      node.headMovedAt = now;
      return true;
    }
    return now - (node.headMovedAt ?? now) <= this.opts.headStallSeconds * 1000;
  }

  /** The hash of the canonical block at `number`, or null when the node has no such block. */
  blockHash(number: bigint): Promise<`0x${string}` | null> {
    return this.call(async (client) => {
      const block = await client.getBlock({ blockNumber: number }).catch((err: Error) => {
        if (err.name === 'BlockNotFoundError') return null;
        throw err;
      });
      if (block && !/^0x[0-9a-f]{64}$/i.test(block.hash ?? '')) throw new InvalidAnswerError();
      return block ? (block.hash!.toLowerCase() as `0x${string}`) : null;
    });
  }

  /** The timestamp (seconds) of block `number`. */
  blockTime(number: bigint): Promise<bigint> {
    return this.call(async (client) => (await client.getBlock({ blockNumber: number })).timestamp);
  }

  /** decimals() of a token contract. */
  decimals(token: `0x${string}`): Promise<number> {
    return this.call(async (client) => Number(await client.readContract({ address: token, abi: DECIMALS_ABI, functionName: 'decimals' })));
  }

  /**
   * Transfers of the chain's configured tokens to `to` in [fromBlock, toBlock], asked in ranges of
   * EVM_LOG_RANGE_BLOCKS. The node's logs are taken raw and each one is checked on its own
   * against what was asked (a configured token contract, the Transfer topic and its decoding, the
   * recipient, the block range, well-formed hashes): anything else is dropped and counted, so a
   * node's answer alone never makes a transfer, and one malformed log does not hide the others.
   */
  async transfersTo(to: `0x${string}`, fromBlock: bigint, toBlock: bigint): Promise<ObservedTransfer[]> {
    const tokens = Object.entries(this.chain.tokens).filter(([, t]) => t) as [TokenSymbol, { address: `0x${string}` }][];
    const byAddress = new Map(tokens.map(([symbol, t]) => [t.address.toLowerCase(), symbol]));
    const topics = [TRANSFER_TOPIC, null, pad(to.toLowerCase() as `0x${string}`)];
    const out: ObservedTransfer[] = [];
    const step = BigInt(this.opts.logRangeBlocks);
    for (let start = fromBlock; start <= toBlock; start += step) {
      const end = start + step - 1n < toBlock ? start + step - 1n : toBlock;
      const logs = await this.call(async (client) => {
        const answer: unknown = await client.request({
          method: 'eth_getLogs',
          params: [{ address: tokens.map(([, t]) => t.address), topics: topics as `0x${string}`[], fromBlock: toHex(start), toBlock: toHex(end) }],
        });
        if (!Array.isArray(answer)) throw new InvalidAnswerError();
        return answer as unknown[];
      });
      for (const raw of logs) {
        const t = this.checked(raw, byAddress, to, start, end);
        if (t) out.push(t);
        else evmRpcErrors.inc({ chain: this.label, kind: 'invalid' });
      }
    }
    return out;
  }

  private checked(raw: unknown, byAddress: Map<string, TokenSymbol>, to: `0x${string}`, start: bigint, end: bigint): ObservedTransfer | undefined {
    const parsed = RawLog.safeParse(raw);
    if (!parsed.success) return undefined;
    const log = parsed.data;
    const token = byAddress.get(log.address.toLowerCase());
    if (!token || log.removed) return undefined;
    let decoded;
    try {
      decoded = decodeEventLog({ abi: [TRANSFER_EVENT], data: log.data as `0x${string}`, topics: log.topics as [`0x${string}`, ...`0x${string}`[]], strict: true });
    } catch {
      return undefined;
    }
    const blockNumber = BigInt(log.blockNumber);
    const { to: recipient, value } = decoded.args;
    if (recipient.toLowerCase() !== to.toLowerCase() || value <= 0n || blockNumber < start || blockNumber > end) return undefined;
    return {
      token,
      to,
      units: value,
      blockNumber,
      blockHash: log.blockHash.toLowerCase() as `0x${string}`,
      txHash: log.transactionHash.toLowerCase() as `0x${string}`,
      logIndex: Number(BigInt(log.logIndex)),
    };
  }
}

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);
const hash32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
const quantity = z.string().regex(/^0x[0-9a-fA-F]{1,16}$/);
/** One log as the JSON-RPC spec shapes it; anything else in a node's answer is dropped. */
const RawLog = z.object({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  topics: z.array(hash32).min(1).max(4),
  data: hex,
  blockNumber: quantity,
  blockHash: hash32,
  transactionHash: hash32,
  logIndex: quantity,
  removed: z.boolean().optional(),
});

class LaggingNodeError extends Error {
  override name = 'LaggingNodeError';
}

class InvalidAnswerError extends Error {
  override name = 'InvalidAnswerError';
}
