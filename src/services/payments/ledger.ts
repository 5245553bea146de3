import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../codes';
import {
  balanceOf,
  ledgerKeyUsed,
  lockAccountBalance,
  writeBalanceAndLedger,
  writeSpendingAndLevel,
  type LedgerRow,
} from '../../db/ledger-store';
import { ApiError } from '../../domain/errors';
import { raisedLevel, type Level } from '../../domain/levels';
import { fromDb, toDecimal, toSignedDecimal, type Cents } from '../../domain/money';

export type LedgerType = 'topup' | 'purchase' | 'refund' | 'adjust';

/** A ledger row as GET /transactions lists it (spec 2.9). */
export function transactionView(r: LedgerRow) {
  return {
    id: String(r.id),
    type: r.type,
    amount: toSignedDecimal(fromDb(r.amount)),
    balanceAfter: toDecimal(fromDb(r.balance_after)),
    order_id: r.order_id,
    note: r.note,
    created_at: Math.floor(new Date(r.created_at).getTime() / 1000),
  };
}

export interface LockedAccount {
  id: string;
  level: Level;
  balance: Cents;
  cumulativeSpending: Cents;
}

/** Locks the account row for the rest of the transaction (balance changes are serialized). */
export async function lockAccount(em: EntityManager, accountId: string): Promise<LockedAccount> {
  const r = await lockAccountBalance(em, accountId);
  if (!r) throw new ApiError('not_found', 'Account not found');
  return {
    id: r.id,
    level: r.level as Level,
    balance: fromDb(r.balance),
    cumulativeSpending: fromDb(r.cumulative_spending),
  };
}

export interface BalanceChange {
  type: LedgerType;
  /** Signed: negative for a purchase. */
  amount: Cents;
  orderId?: string | null;
  /** Unique per money movement, so a retried step can never apply it twice. */
  idempotencyKey: string;
  note?: string | null;
  /** Counts toward cumulative spending (purchases), or gives back spending (refunds). */
  spending?: Cents;
}

/**
 * Applies one balance change on an account locked by `lockAccount` in the same transaction:
 * writes the ledger row with `balanceAfter`, updates spending and raises the level if the new
 * spending plus balance crosses a threshold (never lowers it), and writes `balance.low` if the
 * balance falls below the threshold the account's webhook names. Returns the new balance, or
 * `undefined` when this idempotency key was applied before.
 */
export async function applyBalanceChange(
  em: EntityManager,
  account: LockedAccount,
  change: BalanceChange,
  levelThresholds: readonly Cents[],
): Promise<Cents | undefined> {
  if (await ledgerKeyUsed(em, change.idempotencyKey)) return undefined;
  const balance = account.balance + change.amount;
  if (balance < 0) throw new ApiError('insufficient_balance', 'Balance too low for this order; top up or lower qty');
  const spending = Math.max(0, account.cumulativeSpending + (change.spending ?? 0));
  const level = raisedLevel(account.level, spending + balance, levelThresholds);
  await writeBalanceAndLedger(em, {
    accountId: account.id,
    balance: toDecimal(balance),
    cumulativeSpending: toDecimal(spending),
    level,
    type: change.type,
    amount: toSignedDecimal(change.amount),
    orderId: change.orderId ?? null,
    idempotencyKey: change.idempotencyKey,
    note: change.note ?? null,
    lowEventId: newId('evt'),
  });
  account.balance = balance;
  account.cumulativeSpending = spending;
  account.level = level;
  return balance;
}

/**
 * Adds to cumulative spending without touching the balance (an intent order paid at the hosted
 * checkout), raising the level if spending plus balance crosses a threshold.
 */
export async function addSpending(
  em: EntityManager,
  account: LockedAccount,
  amount: Cents,
  levelThresholds: readonly Cents[],
): Promise<void> {
  const spending = account.cumulativeSpending + amount;
  const level = raisedLevel(account.level, spending + account.balance, levelThresholds);
  await writeSpendingAndLevel(em, account.id, toDecimal(spending), level);
  account.cumulativeSpending = spending;
  account.level = level;
}

/** The balance of spec 2.6, read by GET /balance and the MCP get_balance tool. */
export async function getBalance(em: EntityManager, accountId: string): Promise<{ balance: string; currency: 'USDT' }> {
  const balance = await balanceOf(em, accountId);
  if (balance === undefined) throw new ApiError('not_found', 'Account not found');
  return { balance: toDecimal(fromDb(balance)), currency: 'USDT' };
}
