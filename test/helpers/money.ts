import type { Orm } from '../../src/db/orm';

/** What the money checks read through: a harness, or any service's ORM. */
type WithOrm = { services: { orm: Orm } };

/** The money as Postgres holds it: balance, ledger rows, and that they agree. */
export async function ledgerOf(h: WithOrm, accountId: string) {
  const em = h.services.orm.em.fork();
  const [account] = await em.execute<{ balance: string; level: number; cumulative_spending: string }[]>(
    'select balance, level, cumulative_spending from accounts where id = ?',
    [accountId],
  );
  const rows = await em.execute<{ type: string; amount: string; balance_after: string; order_id: string | null }[]>(
    'select type, amount, balance_after, order_id from ledger_transactions where account_id = ? order by id',
    [accountId],
  );
  const sum = rows.reduce((acc, r) => acc + Math.round(Number(r.amount) * 100), 0);
  let running = 0;
  const chainOk = rows.every((r) => {
    running += Math.round(Number(r.amount) * 100);
    return running === Math.round(Number(r.balance_after) * 100);
  });
  return {
    balance: account.balance,
    level: account.level,
    spending: account.cumulative_spending,
    rows,
    /** Sum of ledger rows in cents; always equals the balance. */
    sumCents: sum,
    balanceCents: Math.round(Number(account.balance) * 100),
    chainOk,
  };
}

export async function expectLedgerMatchesBalance(h: WithOrm, accountId: string) {
  const l = await ledgerOf(h, accountId);
  expect(l.sumCents).toBe(l.balanceCents);
  expect(l.chainOk).toBe(true);
  return l;
}
