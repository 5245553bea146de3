import { encodeEventTopics, pad, toHex } from 'viem';
import { evmRpcErrors } from '../../metrics/registry';
import {
  ask,
  checkChainId,
  decodeTransfer,
  NodeFailure,
  RawBlock,
  RawLog,
  rpcNode,
  TRANSFER_EVENT,
  type RpcNode,
} from './node';
import { settingName, type ChainSettings, type TokenSymbol } from './evm-settings';
import { SecondWitness } from './verify';

// One chain's JSON-RPC nodes, asked in the operator's order. A read runs on one node from start to
// end (its head, logs and blocks agree with each other); a node that fails, times out, answers
// garbage, is on another chain or whose head stops moving is passed over for the next, and the one
// that served last is asked first next time. A node is named by its place in EVM_CHAINS, never by
// its URL (it holds a key).

const TRANSFER_TOPIC = encodeEventTopics({ abi: [TRANSFER_EVENT], eventName: 'Transfer' })[0];
const DECIMALS_ABI = [
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] },
] as const;

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

export type ChainHealth = 'up' | 'down' | 'lagging';

export interface RpcOptions {
  timeoutMs: number;
  headStallSeconds: number;
  logRangeBlocks: number;
}

/** What one node says during one read; `head` is its head when the read began. */
export class NodeView {
  constructor(
    private readonly node: RpcNode,
    readonly head: bigint,
    private readonly chain: ChainSettings,
    private readonly opts: RpcOptions,
  ) {}

  /**
   * The hash of the node's block at `number`. A node that lacks it (one behind, a backend behind a
   * load balancer that lags) has said nothing about that block, certainly not that another one is
   * there: it fails, and the read goes to the next node.
   */
  async blockHash(number: bigint): Promise<`0x${string}`> {
    const block = await this.block(number);
    if (!block) throw new NodeFailure('not_found');
    return block.hash;
  }

  /** The timestamp (seconds) of block `number`. */
  async blockTime(number: bigint): Promise<bigint> {
    const block = await this.block(number);
    if (!block) throw new NodeFailure('not_found');
    return block.timestamp;
  }

  /** The node's `finalized` block number; a node that has none cannot serve a chain read by finality. */
  async finalized(): Promise<bigint> {
    const block = await this.block('finalized');
    if (!block) throw new NodeFailure('not_found');
    return block.number;
  }

  /** decimals() of a token contract. */
  decimals(token: `0x${string}`): Promise<number> {
    return ask(async () =>
      Number(await this.node.client.readContract({ address: token, abi: DECIMALS_ABI, functionName: 'decimals' })),
    );
  }

  private async block(
    tag: bigint | 'finalized',
  ): Promise<{ hash: `0x${string}`; number: bigint; timestamp: bigint } | null> {
    const answer = await ask(() =>
      this.node.client.request({
        method: 'eth_getBlockByNumber',
        params: [typeof tag === 'bigint' ? toHex(tag) : tag, false],
      }),
    );
    if (answer === null) return null;
    const parsed = RawBlock.safeParse(answer);
    const number = parsed.success ? BigInt(parsed.data.number) : undefined;
    if (!parsed.success || (typeof tag === 'bigint' && number !== tag)) throw new NodeFailure('invalid');
    return {
      hash: parsed.data.hash.toLowerCase() as `0x${string}`,
      number: number!,
      timestamp: BigInt(parsed.data.timestamp),
    };
  }

  /**
   * Transfers of the chain's configured tokens to `to` in [fromBlock, toBlock], asked in ranges of
   * EVM_LOG_RANGE_BLOCKS; a range past the node's head is not asked of it (it would answer for
   * blocks it does not have). The node's logs are taken raw and each one is checked on its own
   * against what was asked (a configured token contract, the Transfer topic and its decoding, the
   * recipient, the block range, well-formed hashes): anything else is dropped and counted, so a
   * node's answer alone never makes a transfer, and one malformed log does not hide the others.
   */
  transfersTo(to: `0x${string}`, fromBlock: bigint, toBlock: bigint): Promise<ObservedTransfer[]> {
    return this.transfersToAny([to], fromBlock, toBlock, 1);
  }

  /**
   * The same for many recipients at once: each range is asked once per `perCall` recipients, all
   * tokens in one call, the recipients an OR array in topics[2] (java-tron and most providers take
   * up to 1,000 there). N open deposit addresses cost ceil(N / perCall) calls per range, not N.
   */
  async transfersToAny(
    to: readonly `0x${string}`[],
    fromBlock: bigint,
    toBlock: bigint,
    perCall: number,
  ): Promise<ObservedTransfer[]> {
    if (toBlock > this.head) throw new NodeFailure('lagging');
    const tokens = Object.entries(this.chain.tokens).filter(([, t]) => t) as [
      TokenSymbol,
      { address: `0x${string}` },
    ][];
    const byAddress = new Map(tokens.map(([symbol, t]) => [t.address.toLowerCase(), symbol]));
    const watched = new Set(to.map((a) => a.toLowerCase()));
    const out: ObservedTransfer[] = [];
    const step = BigInt(this.opts.logRangeBlocks);
    for (let start = fromBlock; start <= toBlock; start += step) {
      const end = start + step - 1n < toBlock ? start + step - 1n : toBlock;
      for (let i = 0; i < to.length; i += perCall) {
        const recipients = to.slice(i, i + perCall).map((a) => pad(a.toLowerCase() as `0x${string}`));
        const topics = [TRANSFER_TOPIC, null, recipients.length === 1 ? recipients[0] : recipients];
        const logs = await ask(async () => {
          const answer: unknown = await this.node.client.request({
            method: 'eth_getLogs',
            params: [
              {
                address: tokens.map(([, t]) => t.address),
                topics: topics as `0x${string}`[],
                fromBlock: toHex(start),
                toBlock: toHex(end),
              },
            ],
          });
          if (!Array.isArray(answer)) throw new NodeFailure('invalid');
          return answer as unknown[];
        });
        for (const raw of logs) {
          const t = this.checked(raw, byAddress, watched, start, end);
          if (t) out.push(t);
          else evmRpcErrors.inc({ chain: String(this.chain.chainId), kind: 'invalid' });
        }
      }
    }
    return out;
  }

  private checked(
    raw: unknown,
    byAddress: Map<string, TokenSymbol>,
    watched: Set<string>,
    start: bigint,
    end: bigint,
  ): ObservedTransfer | undefined {
    const parsed = RawLog.safeParse(raw);
    if (!parsed.success) return undefined;
    const log = parsed.data;
    const token = byAddress.get(log.address.toLowerCase());
    if (!token || log.removed) return undefined;
    const decoded = decodeTransfer(log);
    const blockNumber = BigInt(log.blockNumber);
    const to = decoded?.to.toLowerCase() as `0x${string}` | undefined;
    if (!decoded || !to || !watched.has(to) || decoded.value <= 0n || blockNumber < start || blockNumber > end)
      return undefined;
    return {
      token,
      to,
      units: decoded.value,
      blockNumber,
      blockHash: log.blockHash.toLowerCase() as `0x${string}`,
      txHash: log.transactionHash.toLowerCase() as `0x${string}`,
      logIndex: Number(BigInt(log.logIndex)),
    };
  }
}

export class ChainRpc {
  private readonly nodes: RpcNode[];
  /** The node that served the last read, its chain id checked; any other is checked before it serves. */
  private current: number | undefined;
  /** A node of another provider that must agree before a transfer counts (`verifyWith`). */
  readonly witness?: SecondWitness;
  /** How the last read went, for /readyz. */
  health: ChainHealth = 'up';
  private readonly now: () => number;

  constructor(
    readonly chain: ChainSettings,
    readonly opts: RpcOptions,
    { index = 0, now = Date.now }: { index?: number; now?: () => number } = {},
  ) {
    this.now = now;
    const headers = chain.kind === 'tron' && chain.apiKey ? { 'TRON-PRO-API-KEY': chain.apiKey } : undefined;
    this.nodes = chain.rpcUrls.map((url, j) =>
      rpcNode(url, settingName([index, 'rpcUrls', j]), opts.timeoutMs, headers),
    );
    if (chain.verifyWith)
      this.witness = new SecondWitness(
        chain,
        rpcNode(chain.verifyWith, settingName([index, 'verifyWith']), opts.timeoutMs),
      );
  }

  /**
   * `fn` on one node: the first, starting with the one that served last, that is on this chain,
   * answers and whose head has moved within EVM_HEAD_STALL_SECONDS. When every node that answers
   * is stalled (a quiet chain, or all of them behind), the one with the highest head serves and the
   * chain reports itself lagging. A node that fails anywhere in `fn` hands the whole read over.
   */
  async read<T>(fn: (node: NodeView) => Promise<T>): Promise<T> {
    let lastKind = 'none';
    let stalled: { index: number; head: bigint } | undefined;
    const failed = (err: unknown) => {
      if (!(err instanceof NodeFailure)) throw err;
      lastKind = err.kind;
      evmRpcErrors.inc({ chain: String(this.chain.chainId), kind: err.kind });
    };
    const first = this.current ?? 0;
    for (let i = 0; i < this.nodes.length; i++) {
      const index = (first + i) % this.nodes.length;
      try {
        const head = await this.headOf(index);
        if (!this.moved(this.nodes[index], head)) {
          if (!stalled || head > stalled.head) stalled = { index, head };
          throw new NodeFailure('lagging');
        }
        return await this.serve(index, head, fn, 'up');
      } catch (err) {
        failed(err);
      }
    }
    if (stalled) {
      try {
        return await this.serve(stalled.index, stalled.head, fn, 'lagging');
      } catch (err) {
        failed(err);
      }
    }
    this.health = lastKind === 'lagging' ? 'lagging' : 'down';
    throw new ChainUnavailableError(this.chain, lastKind);
  }

  /** The head block number, as `read` finds it. */
  head(): Promise<bigint> {
    return this.read(async (node) => node.head);
  }

  /** decimals() of a token contract. */
  decimals(token: `0x${string}`): Promise<number> {
    return this.read((node) => node.decimals(token));
  }

  /**
   * Every node (and the witness) asked for its chain id, for the start: the places in EVM_CHAINS
   * of those on another chain, with the chain they answered, and of those that did not answer.
   */
  async checkNodes(): Promise<{ wrongChain: { position: string; answered: number }[]; unreachable: string[] }> {
    const wrongChain: { position: string; answered: number }[] = [];
    const unreachable: string[] = [];
    const witness = this.witness?.node;
    for (const node of witness ? [...this.nodes, witness] : this.nodes) {
      try {
        const answered = await ask(() => node.client.getChainId());
        if (answered !== this.chain.chainId) wrongChain.push({ position: node.position, answered });
      } catch {
        unreachable.push(node.position);
      }
    }
    return { wrongChain, unreachable };
  }

  private async headOf(index: number): Promise<bigint> {
    const node = this.nodes[index];
    // On every change of node, so that a URL that now leads to another chain never serves.
    if (index !== this.current) await checkChainId(node, this.chain.chainId);
    return ask(() => node.client.getBlockNumber({ cacheTime: 0 }));
  }

  private async serve<T>(
    index: number,
    head: bigint,
    fn: (node: NodeView) => Promise<T>,
    health: ChainHealth,
  ): Promise<T> {
    const result = await fn(new NodeView(this.nodes[index], head, this.chain, this.opts));
    this.current = index;
    this.health = health;
    return result;
  }

  /** Records `head` for `node`; false when it has not moved for EVM_HEAD_STALL_SECONDS. */
  private moved(node: RpcNode, head: bigint): boolean {
    const now = this.now();
    if (node.head === undefined || head > node.head) {
      node.head = head;
      node.headMovedAt = now;
      return true;
    }
    return now - (node.headMovedAt ?? now) <= this.opts.headStallSeconds * 1000;
  }
}
