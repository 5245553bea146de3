import { createPublicClient, decodeEventLog, http, parseAbiItem, webSocket, type PublicClient } from 'viem';
import { z } from 'zod';

// One JSON-RPC node as the chain reads use it: its client, named by its place in EVM_CHAINS (never
// by its URL, which holds a key), what counts as its failure, and the shapes its answers must have.

export const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

/**
 * What went wrong on a node: the read goes to the chain's next node. Any other error (Postgres, a
 * bug) is not the node's and is thrown as it is.
 */
export class NodeFailure extends Error {
  constructor(readonly kind: string) {
    super(`the node failed (${kind})`);
    this.name = 'NodeFailure';
  }
}

/** A node's client, its place in EVM_CHAINS, and the head it last reported. */
export interface RpcNode {
  client: PublicClient;
  position: string;
  head?: bigint;
  /** When this node's head was last seen to move (ms). */
  headMovedAt?: number;
}

const errorKind = (err: unknown): string => {
  const name = (err as Error)?.name ?? '';
  if (name.includes('Timeout')) return 'timeout';
  if (name.includes('HttpRequest') || name.includes('Socket')) return 'http';
  if (name.includes('Rpc') || name.includes('LimitExceeded')) return 'rpc';
  return 'invalid';
};

/** `headers`: sent with every HTTP request (TronGrid's TRON-PRO-API-KEY); a secret like the URL. */
export function rpcNode(url: string, position: string, timeoutMs: number, headers?: Record<string, string>): RpcNode {
  // Failover and backoff are ours (the next node, the workflow's next sync), not the transport's.
  const transport = /^wss?:/.test(url)
    ? webSocket(url, { timeout: timeoutMs, retryCount: 0 })
    : http(url, { timeout: timeoutMs, retryCount: 0, ...(headers ? { fetchOptions: { headers } } : {}) });
  return { client: createPublicClient({ transport }) as PublicClient, position };
}

/** `fn` on a node: whatever goes wrong there becomes a NodeFailure of its kind. */
export async function ask<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw err instanceof NodeFailure ? err : new NodeFailure(errorKind(err));
  }
}

/** The chain id the node answers; a NodeFailure `wrong_chain` when it is not `chainId`. */
export async function checkChainId(node: RpcNode, chainId: number): Promise<void> {
  if ((await ask(() => node.client.getChainId())) !== chainId) throw new NodeFailure('wrong_chain');
}

/** A log's Transfer(from, to, value), or undefined when it is not one. */
export function decodeTransfer(log: {
  data: string;
  topics: string[];
}): { to: `0x${string}`; value: bigint } | undefined {
  try {
    const { args } = decodeEventLog({
      abi: [TRANSFER_EVENT],
      data: log.data as `0x${string}`,
      topics: log.topics as [`0x${string}`, ...`0x${string}`[]],
      strict: true,
    });
    return { to: args.to, value: args.value };
  } catch {
    return undefined;
  }
}

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);
export const hash32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
export const quantity = z.string().regex(/^0x[0-9a-fA-F]{1,16}$/);
/** One log as the JSON-RPC spec shapes it; anything else in a node's answer is dropped. */
export const RawLog = z.object({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  topics: z.array(hash32).min(1).max(4),
  data: hex,
  blockNumber: quantity,
  blockHash: hash32,
  transactionHash: hash32,
  logIndex: quantity,
  removed: z.boolean().optional(),
});
export const RawBlock = z.object({ hash: hash32, number: quantity, timestamp: quantity });
