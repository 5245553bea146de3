import { toHex } from 'viem';
import { z } from 'zod';
import { evmRpcErrors, evmVerifyDisagreements } from '../../metrics/registry';
import {
  ask,
  checkChainId,
  decodeTransfer,
  hash32,
  NodeFailure,
  quantity,
  RawBlock,
  RawLog,
  type RpcNode,
} from './node';
import type { ChainSettings } from './evm-settings';

// A chain's second witness (`verifyWith`): a node of another provider, asked about each transfer
// the chain's own nodes found deep enough, before it counts. One node, however honest it looks,
// could invent a log and the block that holds it; two providers would both have to.

/** What the transfer's own nodes said: the log, and the block it is in. */
export interface TransferClaim {
  txHash: `0x${string}`;
  logIndex: number;
  token: `0x${string}`;
  to: `0x${string}`;
  units: bigint;
  blockNumber: bigint;
  blockHash: `0x${string}`;
}

/** `unknown`: the witness could not say now (down, behind, inconsistent; counted as an RPC error): the transfer is asked about again. */
export type Verdict = 'agrees' | 'disagrees' | 'unknown';

const Receipt = z.object({
  transactionHash: hash32,
  blockHash: hash32,
  blockNumber: quantity,
  status: z.string().optional(),
  logs: z.array(z.unknown()),
});

export class SecondWitness {
  private chainChecked = false;

  constructor(
    private readonly chain: ChainSettings,
    readonly node: RpcNode,
  ) {}

  /**
   * Agrees when the witness, at or past the transfer's block, has that block with the same hash
   * and the transaction's receipt in it, succeeded, with the same Transfer (token, recipient,
   * value) at the same log index. A disagreement is counted: it is an alert, not a payment.
   */
  async check(claim: TransferClaim): Promise<Verdict> {
    const label = String(this.chain.chainId);
    try {
      if (!this.chainChecked) {
        await checkChainId(this.node, this.chain.chainId);
        this.chainChecked = true;
      }
      const client = this.node.client;
      const head = await ask(() => client.getBlockNumber({ cacheTime: 0 }));
      if (head < claim.blockNumber) throw new NodeFailure('lagging');
      const block = await ask(() =>
        client.request({ method: 'eth_getBlockByNumber', params: [toHex(claim.blockNumber), false] }),
      );
      // Past the block and still without it: a backend behind a load balancer that lags.
      if (block === null) throw new NodeFailure('not_found');
      const receipt = await ask(() => client.request({ method: 'eth_getTransactionReceipt', params: [claim.txHash] }));
      const verdict = agrees(claim, block, receipt) ? 'agrees' : 'disagrees';
      if (verdict === 'disagrees') evmVerifyDisagreements.inc({ chain: label });
      return verdict;
    } catch (err) {
      if (!(err instanceof NodeFailure)) throw err;
      evmRpcErrors.inc({ chain: label, kind: err.kind });
      return 'unknown';
    }
  }
}

function agrees(claim: TransferClaim, rawBlock: unknown, rawReceipt: unknown): boolean {
  const block = RawBlock.safeParse(rawBlock);
  if (!block.success) throw new NodeFailure('invalid');
  if (block.data.hash.toLowerCase() !== claim.blockHash) return false;
  if (rawReceipt === null) return false;
  const receipt = Receipt.safeParse(rawReceipt);
  if (!receipt.success) throw new NodeFailure('invalid');
  const r = receipt.data;
  if (
    r.transactionHash.toLowerCase() !== claim.txHash ||
    r.blockHash.toLowerCase() !== claim.blockHash ||
    BigInt(r.blockNumber) !== claim.blockNumber
  )
    return false;
  if (r.status !== undefined && r.status !== '0x1') return false;
  const log = r.logs
    .map((l) => RawLog.safeParse(l))
    .find((l) => l.success && BigInt(l.data.logIndex) === BigInt(claim.logIndex));
  if (!log?.success || log.data.removed || log.data.address.toLowerCase() !== claim.token.toLowerCase()) return false;
  const transfer = decodeTransfer(log.data);
  return (
    transfer !== undefined && transfer.to.toLowerCase() === claim.to.toLowerCase() && transfer.value === claim.units
  );
}
