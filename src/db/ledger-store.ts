import type { EntityManager } from '@mikro-orm/postgresql';
import { EVENTS_CHANNEL } from './events-store';

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

/**
 * The `balance.low` event of a balance change, as a statement to use as a CTE of the statement
 * that writes the change, so the event exists exactly when the change does (the outbox). It is
 * written when the account's endpoint names balance.low and the change takes the balance from its
 * threshold or above to below it: once per crossing, since the next change that starts below the
 * threshold crosses nothing. Each argument is a SQL expression used once, placeholders and all,
 * in the order given; `from` names the CTEs the expressions read.
 */
export function balanceLowInsert(x: {
  eventId: string;
  accountId: string;
  balanceAfter: string;
  amount: string;
  ledgerType: string;
  orderId: string;
  from?: string;
}): string {
  return `insert into events (id, account_id, type, payload)
       select ${x.eventId}, c.account_id, 'balance.low',
              jsonb_build_object('balance', c.after::text, 'threshold', w.balance_low_threshold::text, 'currency', 'USDT',
                                 'transactionType', c.type, 'orderId', c.order_id)
         from (select ${x.accountId}::uuid as account_id, (${x.balanceAfter})::numeric(18,2) as after, (${x.amount})::numeric as amount,
                      ${x.ledgerType}::text as type, ${x.orderId}::text as order_id${x.from ? ` from ${x.from}` : ''}) c
         join webhook_endpoints w on w.account_id = c.account_id
        where 'balance.low' = any (w.events) and c.after < w.balance_low_threshold and c.after - c.amount >= w.balance_low_threshold
       returning id`;
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
  /** The id its `balance.low` event gets, if the change crosses the account's threshold. */
  lowEventId: string;
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

/**
 * The balance, its ledger row and, when it crosses the account's threshold, its `balance.low`
 * event with the notification, in one statement (one round trip while the account is locked).
 */
export async function writeBalanceAndLedger(em: EntityManager, w: LedgerWrite): Promise<void> {
  const low = balanceLowInsert({
    eventId: '?',
    accountId: '?',
    balanceAfter: '?',
    amount: '?',
    ledgerType: '?',
    orderId: '?',
  });
  // The row is inserted from the account's update, so its id is drawn after the account row is
  // locked whatever the caller did: one account's rows commit in the order of their ids, which
  // the reconciler's ledger checkpoints rely on (reconcile-store.ts).
  const written = await em.execute<{ id: string }[]>(
    `with balance_update as (update accounts set balance = ?, cumulative_spending = ?, level = ? where id = ? returning id),
     ledger as (insert into ledger_transactions (account_id, type, amount, balance_after, order_id, idempotency_key, note)
                select balance_update.id, ?, ?::numeric, ?::numeric, ?, ?, ? from balance_update returning id),
     low as (${low})
     select ledger.id, (select pg_notify('${EVENTS_CHANNEL}', low.id) from low) from ledger`,
    [
      w.balance,
      w.cumulativeSpending,
      w.level,
      w.accountId,
      w.type,
      w.amount,
      w.balance,
      w.orderId,
      w.idempotencyKey,
      w.note,
      w.lowEventId,
      w.accountId,
      w.balance,
      w.amount,
      w.type,
      w.orderId,
    ],
  );
  if (written.length !== 1)
    throw new Error(`account ${w.accountId} not found: its balance and ledger row were not written`);
}

export async function writeSpendingAndLevel(
  em: EntityManager,
  accountId: string,
  cumulativeSpending: string,
  level: number,
): Promise<void> {
  await em.execute('update accounts set cumulative_spending = ?, level = ? where id = ?', [
    cumulativeSpending,
    level,
    accountId,
  ]);
}

export async function balanceOf(em: EntityManager, accountId: string): Promise<string | undefined> {
  const rows = await em.execute<{ balance: string }[]>('select balance from accounts where id = ?', [accountId]);
  return rows[0]?.balance;
}

/** The amount of the money movement made under this idempotency key, if it was made. */
export async function ledgerAmountOf(em: EntityManager, idempotencyKey: string): Promise<string | undefined> {
  const [row] = await em.execute<{ amount: string }[]>(
    'select amount from ledger_transactions where idempotency_key = ?',
    [idempotencyKey],
  );
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
export async function ledgerPage(
  em: EntityManager,
  q: { accountId: string; type?: string; beforeId?: number; limit: number },
): Promise<LedgerRow[]> {
  const params: unknown[] = [q.accountId];
  let sql =
    'select id, type, amount, balance_after, order_id, note, created_at from ledger_transactions where account_id = ?';
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
