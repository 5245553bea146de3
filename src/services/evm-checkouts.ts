import type { EntityManager } from '@mikro-orm/postgresql';
import { getAddress } from 'viem';
import {
  applyEvmTransfer,
  dropVanishedEvmTransfers,
  evmCheckout,
  evmScans,
  evmTransfers,
  recordEvmTransfer,
  saveEvmScan,
  setEvmCheckoutState,
  setEvmTransferState,
  type EvmCheckoutRow,
  type EvmTransferRow,
} from '../db/evm-store';
import { OrderSchema, type Order } from '../db/entities';
import { fromDb, toDecimal, type Cents } from '../domain/money';
import { centsToScaled, centsToUnits, formatScaled, scaledToCents, toScaled } from '../domain/token-amounts';
import { TOKEN_SYMBOLS, type ChainSettings, type TokenSymbol } from '../providers/evm/settings';
import { evmConfirmationLag, evmExcessCredited, evmTransfersCredited } from '../metrics/registry';
import type { ChainRpc } from '../providers/evm/rpc';
import type { SettlePhase } from '../contracts/evm-checkouts';
import { applyBalanceChange, lockAccount } from './ledger';

// What the chain says about one checkout, made into facts: transfers to its deposit address are
// recorded as seen, confirmed at the configured depth once their block is still the canonical one
// (a reorged-out transfer is dropped, and taken up again if it is re-mined), and each confirmed
// transfer is counted once: towards the checkout's amount, or, beyond it, credited to the
// account's balance as its own ledger entry with its reason. Nothing a node says is credited
// before it is confirmed, and nothing confirmed is left uncounted when the watch closes.

/** Why money beyond a checkout's amount was credited to the balance. */
export type ExcessReason = 'overpayment' | 'address_reused' | 'after_expiry' | 'order_closed';

/** Seconds before a checkout's creation that its first scan starts at, for clocks that disagree. */
const START_SLACK_SECONDS = 120n;

/**
 * Scans every chain for transfers to the checkout's address, from where the last scan of that
 * chain left off (less its confirmation depth, so transfers that are not final yet are looked at
 * again and a reorg is seen), and confirms what is deep enough. A chain whose nodes are all down
 * is skipped this time; the others go on. Returns the chains that could not be scanned.
 */
export async function scanCheckout(em: EntityManager, checkout: EvmCheckoutRow, rpcs: ChainRpc[]): Promise<{ unavailable: number[] }> {
  const scans = new Map((await evmScans(em, checkout.id)).map((s) => [s.chain_id, s]));
  const unavailable: number[] = [];
  for (const rpc of rpcs) {
    const { chain } = rpc;
    try {
      const head = await rpc.head();
      const scan = scans.get(chain.chainId);
      const start = scan ? BigInt(scan.start_block) : await firstBlockAfter(rpc, BigInt(Math.floor(new Date(checkout.created_at).getTime() / 1000)) - START_SLACK_SECONDS, head);
      const rescanFrom = scan ? BigInt(scan.scanned_to) - BigInt(chain.confirmations) : start;
      const from = rescanFrom > start ? rescanFrom : start;
      if (from <= head) {
        const seen = await rpc.transfersTo(checkout.address, from, head);
        await em.transactional(async (tx) => {
          for (const t of seen) {
            const decimals = chain.tokens[t.token]!.decimals;
            await recordEvmTransfer(tx, { checkoutId: checkout.id, chainId: chain.chainId, ...t, decimals });
          }
          await dropVanishedEvmTransfers(tx, checkout.id, chain.chainId, from, head, seen.map((t) => `${t.txHash}:${t.logIndex}`));
        });
      }
      await saveEvmScan(em, { checkoutId: checkout.id, chainId: chain.chainId, startBlock: start, scannedTo: head, head });
      await confirmDeepEnough(em, checkout.id, rpc, head);
    } catch (err) {
      if ((err as Error).name !== 'ChainUnavailableError') throw err;
      unavailable.push(chain.chainId);
    }
  }
  return { unavailable };
}

/** The first block at or after `time` (seconds), by bisection on block timestamps. */
async function firstBlockAfter(rpc: ChainRpc, time: bigint, head: bigint): Promise<bigint> {
  if ((await rpc.blockTime(head)) < time) return head;
  let lo = 0n;
  let hi = head;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if ((await rpc.blockTime(mid)) < time) lo = mid + 1n;
    else hi = mid;
  }
  return lo;
}

/** Transfers with their confirmations are confirmed if their block is still canonical, dropped if it is not. */
async function confirmDeepEnough(em: EntityManager, checkoutId: string, rpc: ChainRpc, head: bigint): Promise<void> {
  const need = BigInt(rpc.chain.confirmations);
  const waiting = (await evmTransfers(em, checkoutId)).filter((t) => t.chain_id === rpc.chain.chainId && t.state === 'seen');
  let missing = 0n;
  for (const t of waiting) {
    const depth = head - BigInt(t.block_number) + 1n;
    if (depth < need) {
      missing = need - depth > missing ? need - depth : missing;
      continue;
    }
    const canonical = await rpc.blockHash(BigInt(t.block_number));
    await setEvmTransferState(em, t.id, canonical === t.block_hash ? 'confirmed' : 'dropped', t.block_hash);
  }
  evmConfirmationLag.set({ chain: String(rpc.chain.chainId) }, Number(missing));
}

/** What the settlement step decided; `notify` asks the watch to tell the order's workflow it was paid. */
export interface CheckoutSettlement {
  state: EvmCheckoutRow['state'];
  notify: boolean;
  /** What this step credited to the balance as excess, by reason (cents). */
  credited: { reason: ExcessReason; cents: number }[];
  /** The checkout's order, once it is committed. */
  orderId: string | null;
  /** Transfers seen and not yet confirmed or dropped: the watch does not close while there are any. */
  waiting: number;
}

/**
 * Counts the checkout's newly confirmed transfers, once each, in one transaction under the
 * checkout's row lock. In the `open` phase, while the checkout is pending and its order can still
 * be paid, confirmed money that reaches the amount pays it (the order's workflow is then told, as
 * a provider's callback would) and what goes beyond is excess. Once paid, every later transfer is
 * excess. In the `after` phase (the late watch is over) money that never paid the order is
 * credited to the balance; `closing` does that once more and closes the checkout.
 */
export async function settleCheckout(
  em: EntityManager,
  checkoutId: string,
  settings: { levelThresholds: readonly Cents[]; phase: SettlePhase },
): Promise<CheckoutSettlement> {
  return em.transactional(async (tx) => {
    const checkout = (await evmCheckout(tx, checkoutId, { lock: true }))!;
    const order = await tx.findOne(OrderSchema, { id: checkout.reference }, { refresh: true });
    const transfers = await evmTransfers(tx, checkoutId);
    const fresh = transfers.filter((t) => t.state === 'confirmed' && t.applied === null);
    const waiting = transfers.filter((t) => t.state === 'seen').length;
    let state = checkout.state;
    // A checkout whose order is not (yet) committed: its transfers wait, recorded, for a later step.
    if (!order) return { state, notify: false, credited: [], orderId: null, waiting };
    const credited: CheckoutSettlement['credited'] = [];
    const credit = async (t: EvmTransferRow, applied: 'payment' | 'excess', excess: bigint, reason: ExcessReason) => {
      if (!(await applyEvmTransfer(tx, t.id, applied, excess, excess > 0n ? reason : null))) return;
      evmTransfersCredited.inc({ chain: String(t.chain_id), token: t.token });
      if (excess > 0n) {
        await creditExcess(tx, order, t, Number(excess), reason, settings.levelThresholds);
        credited.push({ reason, cents: Number(excess) });
      }
    };
    const payable = order.status === 'pending' || order.status === 'expired';
    const amount = centsToScaled(fromDb(checkout.amount));
    const total = fresh.reduce((sum, t) => sum + scaled(t), 0n);
    if (state !== 'pending') {
      for (const t of fresh) await credit(t, 'excess', wholeCents(t), 'address_reused');
    } else if (!payable) {
      for (const t of fresh) await credit(t, 'excess', wholeCents(t), 'order_closed');
    } else if (settings.phase === 'open' && total >= amount && fresh.length > 0) {
      let before = 0n;
      for (const t of fresh) {
        const after = before + scaled(t);
        // The part of this transfer past the amount (all of it once the amount was reached).
        const over = after <= amount ? 0n : before >= amount ? scaled(t) : after - amount;
        await credit(t, before >= amount ? 'excess' : 'payment', scaledToCents(over), 'overpayment');
        before = after;
      }
      await setEvmCheckoutState(tx, checkoutId, 'paid');
      state = 'paid';
    } else if (settings.phase !== 'open') {
      for (const t of fresh) await credit(t, 'excess', wholeCents(t), 'after_expiry');
    }
    const notify = state === 'paid' && payable;
    if (settings.phase === 'closing' && state !== 'closed') {
      await setEvmCheckoutState(tx, checkoutId, 'closed');
      state = 'closed';
    }
    return { state, notify, credited, orderId: order.id, waiting };
  });
}

const scaled = (t: EvmTransferRow) => toScaled(BigInt(t.units), t.decimals);
const wholeCents = (t: EvmTransferRow) => scaledToCents(scaled(t));

async function creditExcess(em: EntityManager, order: Order, t: EvmTransferRow, cents: number, reason: ExcessReason, thresholds: readonly Cents[]): Promise<void> {
  const account = await lockAccount(em, order.accountId);
  await applyBalanceChange(
    em,
    account,
    {
      type: 'topup',
      amount: cents,
      orderId: order.id,
      idempotencyKey: `evm:${t.chain_id}:${t.tx_hash}:${t.log_index}`,
      note: `${reason}: ${toDecimal(cents)} ${t.token} on chain ${t.chain_id}, transaction ${t.tx_hash} log ${t.log_index}`,
    },
    thresholds,
  );
  evmExcessCredited.inc({ reason }, cents);
}

/** A checkout as its page shows it: what is asked, what arrived and how deep, and how to pay the rest. */
export interface CheckoutView {
  id: string;
  /** The payer's status line: waiting → seen (confirming) → paid, or partly paid with what is missing. */
  status: 'waiting' | 'confirming' | 'partly_paid' | 'paid' | 'expired' | 'closed';
  amount: string;
  currency: string;
  /** The deposit address, checksummed. */
  address: `0x${string}`;
  /** What counts so far (confirmed), what is seen and not yet deep enough, and what is still missing. */
  received: string;
  unconfirmed: string;
  missing: string;
  /** When the order's payment window closes (ms), null once it no longer matters. */
  expiresAt: number | null;
  transfers: { chainId: number; chainName: string; token: string; amount: string; confirmations: number; required: number; state: EvmTransferRow['state'] }[];
  /** Each chain and token the payer may use, with the EIP-681 URI that asks for what is missing. */
  options: { chainId: number; chainName: string; token: TokenSymbol; tokenAddress: `0x${string}`; units: string; uri: string }[];
}

export async function checkoutView(em: EntityManager, checkoutId: string, chains: ChainSettings[]): Promise<CheckoutView | undefined> {
  const checkout = await evmCheckout(em, checkoutId);
  if (!checkout) return undefined;
  const order = await em.findOne(OrderSchema, { id: checkout.reference });
  const transfers = (await evmTransfers(em, checkoutId)).filter((t) => t.state !== 'dropped');
  const heads = new Map((await evmScans(em, checkoutId)).map((s) => [s.chain_id, BigInt(s.head)]));
  const byId = new Map(chains.map((c) => [c.chainId, c]));
  const amountCents = fromDb(checkout.amount);
  const amount = centsToScaled(amountCents);
  const sum = (rows: EvmTransferRow[]) => rows.reduce((s, t) => s + scaled(t), 0n);
  const confirmed = sum(transfers.filter((t) => t.state === 'confirmed'));
  const unconfirmed = sum(transfers.filter((t) => t.state === 'seen'));
  const paid = checkout.paid_at !== null;
  const missingScaled = paid || confirmed >= amount ? 0n : amount - confirmed;
  // Money already on its way is shown before the window's end: it can still pay a late order.
  const status: CheckoutView['status'] = paid
    ? 'paid'
    : checkout.state === 'closed'
      ? 'closed'
      : unconfirmed > 0n
        ? 'confirming'
        : order?.status === 'expired'
          ? 'expired'
          : confirmed > 0n
            ? 'partly_paid'
            : 'waiting';
  // Ask for what is missing, rounded up to the token's smallest unit.
  const missingCents = Number((missingScaled + centsToScaled(1) - 1n) / centsToScaled(1));
  const address = getAddress(checkout.address);
  return {
    id: checkout.id,
    status,
    amount: toDecimal(amountCents),
    currency: checkout.currency,
    address,
    received: formatScaled(confirmed),
    unconfirmed: formatScaled(unconfirmed),
    missing: formatScaled(missingScaled),
    expiresAt: order?.expiresAt && !paid ? new Date(order.expiresAt).getTime() : null,
    transfers: transfers.map((t) => {
      const chain = byId.get(t.chain_id);
      const head = heads.get(t.chain_id) ?? BigInt(t.block_number);
      const depth = head - BigInt(t.block_number) + 1n;
      const required = chain?.confirmations ?? 0;
      return {
        chainId: t.chain_id,
        chainName: chain?.name ?? `chain ${t.chain_id}`,
        token: t.token,
        amount: formatScaled(scaled(t)),
        confirmations: t.state === 'confirmed' ? Math.max(required, Number(depth)) : Math.max(0, Math.min(Number(depth), required)),
        required,
        state: t.state,
      };
    }),
    options: (paid || checkout.state === 'closed' ? [] : chains).flatMap((c) =>
      TOKEN_SYMBOLS.flatMap((symbol) => {
        const token = c.tokens[symbol];
        if (!token) return [];
        const units = centsToUnits(missingCents, token.decimals).toString();
        const tokenAddress = getAddress(token.address);
        return [{ chainId: c.chainId, chainName: c.name, token: symbol, tokenAddress, units, uri: `ethereum:${tokenAddress}@${c.chainId}/transfer?address=${address}&uint256=${units}` }];
      }),
    ),
  };
}
