import type { EntityManager } from '@mikro-orm/postgresql';

// The balance on the account row and the ledger that records every change of it. Writes run in
// the caller's transaction, on an account row it locked with `lockAccountBalance`.

export interface AccountBalanceRow {
  id: string;
  level: number;
  balance: string;
  cumulative_spending: string;
}

/** Locks the account row for the rest of the caller's transaction. */
export async function lockAccountBalance(em: EntityManager, accountId: string): Promise<AccountBalanceRow | undefined> {
  const rows = await em.execute<AccountBalanceRow[]>(
    'select id, level, balance, cumulative_spending from accounts where id = ? for update',
    [accountId],
  );
  return rows[0];
}

export async function ledgerKeyUsed(em: EntityManager, idempotencyKey: string): Promise<boolean> {
  const seen = await em.execute('select 1 from ledger_transactions where idempotency_key = ?', [idempotencyKey]);
  return seen.length > 0;
}

/** Decimal strings, as stored. */
export interface LedgerWrite {
  accountId: string;
  balance: string;
  cumulativeSpending: string;
  level: number;
  type: string;
  amount: string;
  orderId: string | null;
  idempotencyKey: string;
  note: string | null;
}

/**
 * The ledger row of a purchase debited in the same statement: an insert to use as a CTE after
 * `debited` (the account's updated row: id, balance) and `placed` (the order: id). `amount` is
 * the caller's placeholder for the debited amount. This module is the only writer of the ledger
 * (test/unit/ledger-writer.test.ts); a statement elsewhere that moves money writes its row here.
 */
export function purchaseLedgerInsert(amount: string): string {
  return `insert into ledger_transactions (account_id, type, amount, balance_after, order_id, idempotency_key, note)
       select debited.id, 'purchase', -${amount}::numeric, debited.balance, placed.id, 'purchase:' || placed.id, null from debited, placed`;
}

/** The balance and its ledger row in one statement (one round trip while the account is locked). */
export async function writeBalanceAndLedger(em: EntityManager, w: LedgerWrite): Promise<void> {
  await em.execute(
    `with balance_update as (update accounts set balance = ?, cumulative_spending = ?, level = ? where id = ?)
     insert into ledger_transactions (account_id, type, amount, balance_after, order_id, idempotency_key, note)
     values (?, ?, ?, ?, ?, ?, ?)`,
    [w.balance, w.cumulativeSpending, w.level, w.accountId, w.accountId, w.type, w.amount, w.balance, w.orderId, w.idempotencyKey, w.note],
  );
}

export async function writeSpendingAndLevel(em: EntityManager, accountId: string, cumulativeSpending: string, level: number): Promise<void> {
  await em.execute('update accounts set cumulative_spending = ?, level = ? where id = ?', [cumulativeSpending, level, accountId]);
}

export async function balanceOf(em: EntityManager, accountId: string): Promise<string | undefined> {
  const rows = await em.execute<{ balance: string }[]>('select balance from accounts where id = ?', [accountId]);
  return rows[0]?.balance;
}

/** The amount of the money movement made under this idempotency key, if it was made. */
export async function ledgerAmountOf(em: EntityManager, idempotencyKey: string): Promise<string | undefined> {
  const [row] = await em.execute<{ amount: string }[]>('select amount from ledger_transactions where idempotency_key = ?', [idempotencyKey]);
  return row?.amount;
}

export interface LedgerRow {
  id: string;
  type: string;
  amount: string;
  balance_after: string;
  order_id: string | null;
  note: string | null;
  created_at: Date;
}

/** One page of an account's ledger, newest first: `limit` rows with ids below `beforeId`. */
export async function ledgerPage(em: EntityManager, q: { accountId: string; type?: string; beforeId?: number; limit: number }): Promise<LedgerRow[]> {
  const params: unknown[] = [q.accountId];
  let sql = 'select id, type, amount, balance_after, order_id, note, created_at from ledger_transactions where account_id = ?';
  if (q.type) {
    sql += ' and type = ?';
    params.push(q.type);
  }
  if (q.beforeId !== undefined) {
    sql += ' and id < ?';
    params.push(q.beforeId);
  }
  sql += ' order by id desc limit ?';
  params.push(q.limit);
  return em.execute<LedgerRow[]>(sql, params);
}
