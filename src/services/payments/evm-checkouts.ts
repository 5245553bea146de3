import type { EntityManager } from '@mikro-orm/postgresql';
import { getAddress } from 'viem';
import {
  applyEvmTransfer,
  evmCheckout,
  evmScans,
  evmTransfers,
  setEvmCheckoutState,
  type EvmCheckoutRow,
  type EvmScanRow,
  type EvmTransferRow,
} from '../../db/evm-store';
import { OrderSchema, type Order } from '../../db/entities/all-entities';
import { recordPaymentConfirmation } from '../../db/payment-facts-store';
import { fromDb, toDecimal, type Cents } from '../../domain/money';
import { centsToScaled, centsToUnits, formatScaled, scaledToCents, toScaled } from '../../domain/token-amounts';
import { TOKEN_SYMBOLS, type ChainKind, type ChainSettings, type TokenSymbol } from '../../providers/evm/evm-settings';
import { tronAddress } from '../../providers/evm/tron';
import { addressOn } from './evm-scan';
import { evmExcessCredited, evmTransfersCredited } from '../../metrics/registry';
import type { SettlePhase } from '../../contracts/evm-checkouts-contract';
import { applyBalanceChange, lockAccount } from './ledger';

// A checkout's confirmed transfers (recorded and confirmed by the scans, src/services/payments/evm-scan.ts),
// each counted once: towards the checkout's amount, or, beyond it, credited to the account's
// balance as its own ledger entry with its reason. Nothing a node says is credited before it is
// confirmed, and nothing confirmed is left uncounted when the watch closes.

/** Why money beyond a checkout's amount was credited to the balance. */
export type ExcessReason = 'overpayment' | 'address_reused' | 'after_expiry' | 'order_closed';

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
      // Open until the order settles: the reconciler finds a paid order its workflow never settled.
      await recordPaymentConfirmation(tx, { checkoutId, orderId: order.id, source: 'chain' });
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

/**
 * The addresses as the chain's wallets show them, and what the QR code holds. On an EVM chain an
 * EIP-681 token transfer (wallets that read it fill in token, chain and amount). TRON has no
 * payment URI its wallets share: their scanners read a bare T… address (TokenPocket documents
 * that for TRON; TronLink's transfer link is its own deep link for listed DApps), so the QR code
 * holds the address alone and the page shows the amount and token beside it.
 */
function paymentUri(
  chain: ChainSettings,
  token: `0x${string}`,
  to: `0x${string}`,
  units: string,
): { address: string; tokenAddress: string; uri: string } {
  if (chain.kind === 'tron') {
    const address = tronAddress(to);
    return { address, tokenAddress: tronAddress(token), uri: address };
  }
  const address = getAddress(to);
  const tokenAddress = getAddress(token);
  return {
    address,
    tokenAddress,
    uri: `ethereum:${tokenAddress}@${chain.chainId}/transfer?address=${address}&uint256=${units}`,
  };
}

/** Confirmations a transfer waits for; on a chain read by finality, the depth of its last finalized block. */
function requiredDepth(chain: ChainSettings | undefined, scan: EvmScanRow | undefined): number {
  if (chain?.finality !== 'finalized') return chain?.confirmations ?? 0;
  return scan?.finalized ? Number(BigInt(scan.head) - BigInt(scan.finalized) + 1n) : 1;
}

const scaled = (t: EvmTransferRow) => toScaled(BigInt(t.units), t.decimals);
const wholeCents = (t: EvmTransferRow) => scaledToCents(scaled(t));

async function creditExcess(
  em: EntityManager,
  order: Order,
  t: EvmTransferRow,
  cents: number,
  reason: ExcessReason,
  thresholds: readonly Cents[],
): Promise<void> {
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
  transfers: {
    chainId: number;
    chainName: string;
    token: string;
    amount: string;
    confirmations: number;
    required: number;
    state: EvmTransferRow['state'];
  }[];
  /**
   * Each chain and token the payer may use: the deposit address and token contract as that chain's
   * wallets show them (0x… checksummed, or T… on TRON), and what the QR code holds (paymentUri).
   */
  options: {
    chainId: number;
    chainName: string;
    kind: ChainKind;
    token: TokenSymbol;
    address: string;
    tokenAddress: string;
    units: string;
    uri: string;
  }[];
}

export async function checkoutView(
  em: EntityManager,
  checkoutId: string,
  chains: ChainSettings[],
): Promise<CheckoutView | undefined> {
  const checkout = await evmCheckout(em, checkoutId);
  if (!checkout) return undefined;
  const order = await em.findOne(OrderSchema, { id: checkout.reference });
  const transfers = (await evmTransfers(em, checkoutId)).filter((t) => t.state !== 'dropped');
  const scans = new Map((await evmScans(em, checkoutId)).map((s) => [s.chain_id, s]));
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
      const scan = scans.get(t.chain_id);
      const head = scan ? BigInt(scan.head) : BigInt(t.block_number);
      const depth = head - BigInt(t.block_number) + 1n;
      const required = requiredDepth(chain, scan);
      return {
        chainId: t.chain_id,
        chainName: chain?.name ?? `chain ${t.chain_id}`,
        token: t.token,
        amount: formatScaled(scaled(t)),
        confirmations:
          t.state === 'confirmed' ? Math.max(required, Number(depth)) : Math.max(0, Math.min(Number(depth), required)),
        required,
        state: t.state,
      };
    }),
    options: (paid || checkout.state === 'closed' ? [] : chains).flatMap((c) =>
      TOKEN_SYMBOLS.flatMap((symbol) => {
        const token = c.tokens[symbol];
        const to = addressOn(checkout, c);
        if (!token || !to) return [];
        const units = centsToUnits(missingCents, token.decimals).toString();
        return [
          {
            chainId: c.chainId,
            chainName: c.name,
            kind: c.kind ?? 'evm',
            token: symbol,
            units,
            ...paymentUri(c, token.address, to, units),
          },
        ];
      }),
    ),
  };
}
