import type { EntityManager } from '@mikro-orm/postgresql';
import {
  evmScans,
  evmScansOn,
  evmTransfers,
  recordEvmTransfer,
  saveEvmRescan,
  saveEvmScans,
  waitingEvmTransfers,
  setEvmTransferState,
  type EvmCheckoutRow,
  type EvmScanRow,
  type EvmTransferRow,
} from '../../db/evm-store';
import { evmConfirmationLag } from '../../metrics/registry';
import type { ChainRpc, NodeView, ObservedTransfer } from '../../providers/evm/rpc';
import type { ChainSettings, TokenSymbol } from '../../providers/evm/evm-settings';

// What the chain says about one checkout's address, made into facts. Transfers seen are recorded;
// one is confirmed once it is deep enough, its block is the one the node still has at that height
// and, where the chain has a second witness, that witness shows the same; it is dropped only when
// a node deep enough has another block at its height and no longer lists it. A node that lacks a
// block ("not found") says nothing about it: the read goes to the next node, and with none left
// the transfer waits and is asked about again. Every read of a scan comes from one node, so its
// head, logs and blocks agree with each other.

/** Seconds before a checkout's creation that its first scan starts at, for clocks that disagree. */
const START_SLACK_SECONDS = 120n;

/** A rescan before closing that has not finished (a chain not read to its end, a transfer still waiting): the step is tried again. */
export class ClosingNotReadyError extends Error {
  override name = 'ClosingNotReadyError';
}

/**
 * One checkout read on its own on every chain (the chains' scanners read for all open checkouts at
 * once, `scanCheckoutsOn`; bench/chain-scan times this read per checkout as its baseline): from
 * where the last scan of that chain left off (less the blocks that may still change, so a reorg is
 * seen) up to the serving node's head, confirming what is deep enough. A chain whose nodes are all down is skipped this
 * time; the others go on. Returns the chains that could not be scanned.
 */
export async function scanCheckout(
  em: EntityManager,
  checkout: EvmCheckoutRow,
  rpcs: ChainRpc[],
): Promise<{ unavailable: number[] }> {
  const unavailable: number[] = [];
  for (const rpc of rpcs.filter((r) => addressOn(checkout, r.chain))) {
    try {
      await scanCheckoutsOn(em, rpc, [checkout], 1);
    } catch (err) {
      if ((err as Error).name !== 'ChainUnavailableError') throw err;
      unavailable.push(rpc.chain.chainId);
    }
  }
  return { unavailable };
}

/**
 * Before a checkout closes: its address is read again on every chain from the checkout's start
 * block, so a transfer that a node left out of its logs while it lagged (and that later scans'
 * windows moved past) is still recorded; then a scan confirms what is deep enough. The rescan
 * keeps its progress range by range, so one cut short by `deadline` (ms) goes on from there.
 * Throws (ClosingNotReadyError, or ChainUnavailableError) until every chain was read to its end
 * and no transfer waits for its confirmations.
 */
export async function rescanBeforeClosing(
  em: EntityManager,
  checkout: EvmCheckoutRow,
  rpcs: ChainRpc[],
  deadline: number,
): Promise<void> {
  for (const rpc of rpcs.filter((r) => addressOn(checkout, r.chain))) await rescanChain(em, checkout, rpc, deadline);
  const waiting = (await evmTransfers(em, checkout.id)).filter((t) => t.state === 'seen').length;
  if (waiting > 0)
    throw new ClosingNotReadyError(
      `the checkout's closing waits for ${waiting} transfer(s) to be confirmed or dropped`,
    );
}

/**
 * The checkout's deposit address on `chain`, in the hex its log filters take: on a TRON chain the
 * one TRON_XPUB derives at the same index (none for a checkout opened before TRON was configured:
 * its page never offered it, and the chain is not read for it).
 */
export function addressOn(checkout: EvmCheckoutRow, chain: ChainSettings): `0x${string}` | null {
  return chain.kind === 'tron' ? checkout.tron_address : checkout.address;
}

async function rescanChain(
  em: EntityManager,
  checkout: EvmCheckoutRow,
  rpc: ChainRpc,
  deadline: number,
): Promise<void> {
  const { chainId } = rpc.chain;
  const address = addressOn(checkout, rpc.chain)!;
  const scanOf = async () => (await evmScans(em, checkout.id)).find((s) => s.chain_id === chainId);
  // Never scanned (its nodes were down all along): the first scan reads from the start block.
  if (!(await scanOf())) await scanCheckoutsOn(em, rpc, [checkout], 1);
  const range = BigInt(rpc.opts.logRangeBlocks);
  for (let scan = (await scanOf())!; ; scan = (await scanOf())!) {
    const from = (scan.rescanned_to === null ? BigInt(scan.start_block) - 1n : BigInt(scan.rescanned_to)) + 1n;
    const target = BigInt(scan.scanned_to);
    if (from > target) {
      await scanCheckoutsOn(em, rpc, [checkout], 1);
      return;
    }
    if (Date.now() > deadline)
      throw new ClosingNotReadyError(`the rescan of the checkout's address on chain ${chainId} goes on`);
    const to = from + range - 1n < target ? from + range - 1n : target;
    const seen = await rpc.read((node) => node.transfersTo(address, from, to));
    await em.transactional(async (tx) => {
      for (const t of seen) await record(tx, checkout, rpc.chain, t);
    });
    await saveEvmRescan(em, checkout.id, chainId, to);
  }
}

/** A checkout read on one chain: its row, its deposit address there (hex) and its scan so far. */
interface Watched {
  checkout: EvmCheckoutRow;
  address: `0x${string}`;
  scan?: EvmScanRow;
}

/**
 * Reads one chain for many checkouts at once, on one node: every new block range once, with all
 * their addresses in topics[2] (`perCall` to a call), from the earliest block any of them still
 * needs (less the blocks that may still change) to the node's head. What it lists is recorded for
 * the checkout whose address it was paid to, what is deep enough is confirmed, and each checkout's
 * scan row moves to the head. Returns the ids of the checkouts whose transfers it recorded,
 * confirmed or dropped.
 */
export async function scanCheckoutsOn(
  em: EntityManager,
  rpc: ChainRpc,
  checkouts: readonly EvmCheckoutRow[],
  perCall: number,
): Promise<Set<string>> {
  const { chain } = rpc;
  const group = checkouts.flatMap((checkout): Watched[] => {
    const address = addressOn(checkout, chain);
    return address ? [{ checkout, address: address.toLowerCase() as `0x${string}` }] : [];
  });
  if (group.length === 0) return new Set();
  const ids = group.map((w) => w.checkout.id);
  const scans = new Map((await evmScansOn(em, chain.chainId, ids)).map((s) => [s.checkout_id, s]));
  for (const w of group) w.scan = scans.get(w.checkout.id);
  const byAddress = new Map(group.map((w) => [w.address, w]));
  const byId = new Map(group.map((w) => [w.checkout.id, w]));
  return rpc.read(async (node) => {
    const depth = await depthOn(node, chain);
    const waiting = await waitingEvmTransfers(em, chain.chainId, ids);
    // Checkouts never scanned on this chain start at the first block after the earliest of them opened.
    const fresh = group.filter((w) => !w.scan);
    const freshStart =
      fresh.length === 0
        ? 0n
        : await firstBlockAfter(node, secondsOf(fresh.map((w) => w.checkout.created_at)) - START_SLACK_SECONDS);
    const startOf = (w: Watched) => (w.scan ? BigInt(w.scan.start_block) : freshStart);
    const fromOf = (w: Watched) => {
      const unsettled = w.scan ? depth.unsettledFrom(BigInt(w.scan.scanned_to)) : startOf(w);
      return unsettled > startOf(w) ? unsettled : startOf(w);
    };
    const from = group.reduce((least, w) => (fromOf(w) < least ? fromOf(w) : least), fromOf(group[0]));
    const seen =
      from <= node.head
        ? await node.transfersToAny(
            group.map((w) => w.address),
            from,
            node.head,
            perCall,
          )
        : [];
    // A transfer still waiting below that window is looked for again in its own block.
    const below = new Map<bigint, Set<`0x${string}`>>();
    for (const t of waiting) {
      const number = BigInt(t.block_number);
      if (number < from && number <= node.head)
        below.set(number, (below.get(number) ?? new Set()).add(byId.get(t.checkout_id)!.address));
    }
    for (const [block, addresses] of below)
      seen.push(...(await node.transfersToAny([...addresses], block, block, perCall)));
    const listed = new Set(seen.map((t) => `${t.txHash}:${t.logIndex}`));
    // Not listed any more: gone only if this node, deep enough, has another block at its height.
    const gone: EvmTransferRow[] = [];
    for (const t of waiting) {
      const number = BigInt(t.block_number);
      if (number > node.head || listed.has(`${t.tx_hash}:${t.log_index}`) || !depth.reached(number)) continue;
      if ((await node.blockHash(number)) !== t.block_hash) gone.push(t);
    }
    const recorded = seen.flatMap((t) => {
      const w = byAddress.get(t.to);
      return w && t.blockNumber >= startOf(w) ? [{ w, t }] : [];
    });
    await em.transactional(async (tx) => {
      for (const { w, t } of recorded) await record(tx, w.checkout, chain, t);
      for (const t of gone) await setEvmTransferState(tx, t.id, 'dropped', t.block_hash);
    });
    await saveEvmScans(
      em,
      chain.chainId,
      { scannedTo: node.head, head: node.head, finalized: depth.finalized },
      group.map((w) => ({ checkoutId: w.checkout.id, startBlock: startOf(w) })),
    );
    const confirmed = await confirmDeepEnough(em, byId, rpc, node, depth);
    return new Set([...recorded.map(({ w }) => w.checkout.id), ...gone.map((t) => t.checkout_id), ...confirmed]);
  });
}

/** The earliest of some times, in whole seconds. */
const secondsOf = (times: readonly Date[]) =>
  BigInt(Math.floor(Math.min(...times.map((t) => new Date(t).getTime())) / 1000));

const record = (em: EntityManager, checkout: EvmCheckoutRow, chain: ChainSettings, t: ObservedTransfer) =>
  recordEvmTransfer(em, {
    checkoutId: checkout.id,
    chainId: chain.chainId,
    ...t,
    decimals: chain.tokens[t.token]!.decimals,
  });

/** How deep a block is, by the chain's rule, on the node serving the read. */
interface Depth {
  /** The block is deep enough to count (and to be judged gone). */
  reached(block: bigint): boolean;
  /** Blocks it still lacks. */
  missing(block: bigint): bigint;
  /** Where a scan that last read up to `scannedTo` reads again from: the blocks that may still change. */
  unsettledFrom(scannedTo: bigint): bigint;
  finalized: bigint | null;
}

async function depthOn(node: NodeView, chain: ChainSettings): Promise<Depth> {
  if (chain.finality === 'finalized') {
    const finalized = await node.finalized();
    return {
      reached: (block) => block <= finalized,
      missing: (block) => (block > finalized ? block - finalized : 0n),
      unsettledFrom: (scannedTo) => (scannedTo < finalized + 1n ? scannedTo : finalized + 1n),
      finalized,
    };
  }
  const need = BigInt(chain.confirmations ?? 0);
  const depth = (block: bigint) => node.head - block + 1n;
  return {
    reached: (block) => depth(block) >= need,
    missing: (block) => (depth(block) < need ? need - depth(block) : 0n),
    unsettledFrom: (scannedTo) => scannedTo - need,
    finalized: null,
  };
}

/** The first block at or after `time` (seconds), by bisection on block timestamps. */
async function firstBlockAfter(node: NodeView, time: bigint): Promise<bigint> {
  if ((await node.blockTime(node.head)) < time) return node.head;
  let lo = 0n;
  let hi = node.head;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if ((await node.blockTime(mid)) < time) lo = mid + 1n;
    else hi = mid;
  }
  return lo;
}

/**
 * Waiting transfers deep enough whose block the node has with the same hash are confirmed (once
 * the chain's witness, if any, agrees). A different hash leaves them waiting: whether they are gone
 * is judged with the scan's listing, never here. Returns the checkouts of those confirmed.
 */
async function confirmDeepEnough(
  em: EntityManager,
  group: Map<string, Watched>,
  rpc: ChainRpc,
  node: NodeView,
  depth: Depth,
): Promise<string[]> {
  const { chain } = rpc;
  let missing = 0n;
  const confirmed: string[] = [];
  const hashes = new Map<bigint, Promise<`0x${string}`>>();
  for (const t of await waitingEvmTransfers(em, chain.chainId, [...group.keys()])) {
    const number = BigInt(t.block_number);
    if (number > node.head) continue;
    if (!depth.reached(number)) {
      if (depth.missing(number) > missing) missing = depth.missing(number);
      continue;
    }
    if (!hashes.has(number)) hashes.set(number, node.blockHash(number));
    if ((await hashes.get(number)) !== t.block_hash) continue;
    if (rpc.witness) {
      const claim = {
        txHash: t.tx_hash as `0x${string}`,
        logIndex: t.log_index,
        token: chain.tokens[t.token as TokenSymbol]!.address,
        to: group.get(t.checkout_id)!.address,
        units: BigInt(t.units),
        blockNumber: number,
        blockHash: t.block_hash as `0x${string}`,
      };
      if ((await rpc.witness.check(claim)) !== 'agrees') continue;
    }
    await setEvmTransferState(em, t.id, 'confirmed', t.block_hash);
    confirmed.push(t.checkout_id);
  }
  evmConfirmationLag.set({ chain: String(chain.chainId) }, Number(missing));
  return confirmed;
}
