import { reconcileNow } from '../../src/services/reconcile';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';

// The reconciler's ledger check reads each account's ledger from the row after its checkpoint (the
// last row a check found adding up), and from the first row once the full check is due
// (RECONCILE_LEDGER_FULL_HOURS, 24 here as by default). Every run here is one the test makes.
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ RECONCILE_SECONDS: '0' });
});
afterAll(async () => {
  await h?.stop();
});

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** One reconciliation in this process: the ledger's findings for `accountId`. */
async function ledgerFindingsOf(accountId: string, opts: { dryRun?: boolean } = {}) {
  const report = await reconcileNow(
    { orm: h.services.orm, temporal: h.services.temporal, config: h.config, log: silent },
    opts,
  );
  return report.findings.filter((f) => f.kind === 'ledger' && f.subjectId === accountId);
}

async function checkpointOf(accountId: string) {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ through_id: string; through_balance: string; full_at: string; full_lately: boolean }[]>(
      `select through_id::text, through_balance::text, full_at::text, full_at > now() - interval '1 minute' as full_lately
         from ledger_checkpoints where account_id = ?`,
      [accountId],
    );
  return row;
}

async function lastLedgerIdOf(accountId: string): Promise<string> {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ id: string }[]>('select max(id)::text as id from ledger_transactions where account_id = ?', [accountId]);
  return row.id;
}

test('a run reads each ledger from its checkpoint on; a dry run moves none; a balance moved without a ledger row is found at once', async () => {
  const buyer = await reseller(h, '30.00');
  const other = await reseller(h, '40.00');
  expect(await ledgerFindingsOf(buyer.accountId)).toEqual([]);
  const first = await checkpointOf(buyer.accountId);
  expect(first).toMatchObject({ through_id: await lastLedgerIdOf(buyer.accountId), through_balance: '30.00' });

  const placed = await buyer.api.post('/orders', {
    externalOrderId: 'after-checkpoint',
    productId: 'prod_api_order_test',
    qty: 1,
  });
  expect(placed.body.status).toBe('delivered');
  const money = await expectLedgerMatchesBalance(h, buyer.accountId);
  expect(money.rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);

  // A dry run reads the new row and writes nothing.
  expect(await ledgerFindingsOf(buyer.accountId, { dryRun: true })).toEqual([]);
  expect(await checkpointOf(buyer.accountId)).toEqual(first);

  expect(await ledgerFindingsOf(buyer.accountId)).toEqual([]);
  const second = await checkpointOf(buyer.accountId);
  expect(second).toMatchObject({ through_id: await lastLedgerIdOf(buyer.accountId), through_balance: money.balance });
  expect(Number(second.through_id)).toBeGreaterThan(Number(first.through_id));
  // Not a full check: the time of the last one stands.
  expect(second.full_at).toEqual(first.full_at);

  // A balance moved without its ledger row: the checkpoint's balance plus the rows after it is the
  // whole ledger's sum, so the alert says what a full check would.
  const em = h.services.orm.em.fork();
  await em.execute('update accounts set balance = balance + 5 where id = ?', [other.accountId]);
  const before = await ledgerOf(h, other.accountId);
  expect(await ledgerFindingsOf(other.accountId)).toEqual([
    {
      kind: 'ledger',
      subjectId: other.accountId,
      action: 'alerted',
      detail: { balance: '45.00', ledgerSum: '40.00', differenceCents: 500, firstBrokenLedgerId: null },
    },
  ]);
  expect(await ledgerOf(h, other.accountId)).toEqual(before);
});

test('a row changed behind the checkpoint is found by the next full check, and nothing is changed', async () => {
  const { accountId } = await reseller(h, '25.00');
  expect(await ledgerFindingsOf(accountId)).toEqual([]);
  const firstRow = await lastLedgerIdOf(accountId);
  expect(await checkpointOf(accountId)).toMatchObject({ through_id: firstRow, through_balance: '25.00' });

  const em = h.services.orm.em.fork();
  await em.execute('update ledger_transactions set amount = 26.00 where id = ?', [firstRow]);
  const before = await ledgerOf(h, accountId);
  // Behind the checkpoint: an incremental run does not read it.
  expect(await ledgerFindingsOf(accountId)).toEqual([]);

  // A day on, the full check is due: it reads from the first row.
  await em.execute(`update ledger_checkpoints set full_at = now() - interval '25 hours' where account_id = ?`, [
    accountId,
  ]);
  expect(await ledgerFindingsOf(accountId)).toEqual([
    {
      kind: 'ledger',
      subjectId: accountId,
      action: 'alerted',
      detail: { balance: '25.00', ledgerSum: '26.00', differenceCents: -100, firstBrokenLedgerId: firstRow },
    },
  ]);
  expect(await ledgerOf(h, accountId)).toEqual(before);
  // With its alert open the account is read in full every run, and put right it resolves.
  await em.execute('update ledger_transactions set amount = 25.00 where id = ?', [firstRow]);
  expect(await ledgerFindingsOf(accountId)).toEqual([]);
  const [alert] = await em.execute<{ open: boolean }[]>(
    `select resolved_at is null as open from reconciler_repairs where kind = 'ledger' and subject_id = ?`,
    [accountId],
  );
  expect(alert.open).toBe(false);
  expect((await checkpointOf(accountId)).full_lately).toBe(true);
});

test('the full checks are spread over the period: accounts checked in one run come due at their own times, none within half of it, all within one', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push((await h.account('3.00')).accountId);
  const em = h.services.orm.em.fork();
  /** Moves the accounts' last full check back by `hours`, runs the reconciler, and counts the ones read in full. */
  const fullAfterMovingBack = async (hours: number) => {
    await em.execute(
      `update ledger_checkpoints set full_at = full_at - make_interval(secs => ?) where account_id = any(?::uuid[])`,
      [hours * 3600, `{${ids.join(',')}}`],
    );
    expect(await ledgerFindingsOf(ids[0])).toEqual([]);
    const [row] = await em.execute<{ full: string }[]>(
      `select count(*) filter (where full_at > now() - interval '1 minute')::text as "full"
         from ledger_checkpoints where account_id = any(?::uuid[])`,
      [`{${ids.join(',')}}`],
    );
    return Number(row.full);
  };
  // No checkpoint yet: every one is read in full.
  expect(await fullAfterMovingBack(0)).toBe(40);
  // 9.6 hours on (0.4 of the 24): some accounts' own times have passed, but not half a period.
  expect(await fullAfterMovingBack(9.6)).toBe(0);
  // 14.4 hours on (0.6): the accounts whose time passed since (about 60% of them), not all at once.
  const spread = await fullAfterMovingBack(4.8);
  expect(spread).toBeGreaterThan(0);
  expect(spread).toBeLessThan(40);
  // A period on from the last full check, whatever the account's time: every one.
  expect(await fullAfterMovingBack(24.1)).toBe(40);
  for (const id of ids.slice(0, 3)) expect((await expectLedgerMatchesBalance(h, id)).balance).toBe('3.00');
});
