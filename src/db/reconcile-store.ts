import type { EntityManager } from '@mikro-orm/postgresql';

// The reconciler's reads and its record (Migration20261205000000Reconciler). Every page is a
// keyset query over one lifecycle's non-final rows, which partial indexes keep apart from the
// final ones, in key order: bounded work per step, whatever the size of the tables (bench/reconcile
// shows each plan at 100k orders). Rows changed within the grace period are left for a later run,
// their workflow may be starting.

/**
 * Where one lifecycle's non-final rows are, in the shape every keyset page shares. `unsettled` and
 * `key` are the predicate and column of the lifecycle's partial index, so a page reads only
 * non-final rows, in key order; `changedAt` is what the grace period is measured against.
 */
interface UnsettledRows {
  select: string;
  from: string;
  unsettled: string;
  key: string;
  changedAt: string;
}

/** One page of a lifecycle's non-final rows after the cursor `after`, leaving those changed within the grace period. */
function unsettledPage<Row>(
  em: EntityManager,
  rows: UnsettledRows,
  after: string | number,
  limit: number,
  graceSeconds: number,
) {
  return em.execute<Row[]>(
    `select ${rows.select} from ${rows.from}
      where ${rows.unsettled} and ${rows.key} > ? and ${rows.changedAt} < now() - make_interval(secs => ?)
      order by ${rows.key} limit ?`,
    [after, graceSeconds, limit],
  );
}

export interface UnsettledPaymentRow {
  id: string;
  account_id: string;
  kind: 'purchase' | 'topup';
  external_order_id: string | null;
  external_topup_id: string | null;
  /** `expired`: its payment was confirmed and never settled (see pendingPayments). */
  status: 'pending' | 'expired';
}

/**
 * Orders and top-ups waiting for their payment (an order's workflow is named by its
 * externalOrderId), and, in the same keyset, expired ones whose payment was confirmed but never
 * settled: a run that ended before it read the notice leaves that, and nothing else would look at
 * it again. The second half is found through the confirmations still open
 * (`payment_confirmations_unsettled_index`), so it costs what the payments in flight cost.
 */
export const pendingPayments = (em: EntityManager, after: string, limit: number, graceSeconds: number) =>
  em.execute<UnsettledPaymentRow[]>(
    `(select id, account_id, kind, external_order_id, external_topup_id, status from orders
       where status = 'pending' and (kind = 'topup' or external_order_id is not null)
         and id > ? and updated_at < now() - make_interval(secs => ?)
       order by id limit ?)
     union all
     (select o.id, o.account_id, o.kind, o.external_order_id, o.external_topup_id, o.status from orders o
       where o.id in (select order_id from payment_confirmations
                       where settled_at is null and order_id > ? and confirmed_at < now() - make_interval(secs => ?))
         and o.status = 'expired' and (o.kind = 'topup' or o.external_order_id is not null)
         and o.updated_at < now() - make_interval(secs => ?)
       order by o.id limit ?)
     order by id limit ?`,
    [after, graceSeconds, limit, after, graceSeconds, graceSeconds, limit, limit],
  );

/** Paid direct-code orders that procurement has not finished (processing, or waiting for support). */
export const unfinishedProcurements = (em: EntityManager, after: string, limit: number, graceSeconds: number) =>
  unsettledPage<{ id: string; account_id: string; external_order_id: string | null }>(
    em,
    {
      select: 'id, account_id, external_order_id',
      from: 'orders',
      unsettled: `status = 'paid' and delivery_type = 'direct_code' and fulfillment_status in ('processing', 'needs_attention')`,
      key: 'id',
      changedAt: 'updated_at',
    },
    after,
    limit,
    graceSeconds,
  );

/** Redemptions whose current attempt has not ended. */
export const openRedemptions = (em: EntityManager, after: string, limit: number, graceSeconds: number) =>
  unsettledPage<{ id: string; attempt: number }>(
    em,
    {
      select: 'id, attempt',
      from: 'redemptions',
      unsettled: `status in ('pending', 'processing')`,
      key: 'id',
      changedAt: 'updated_at',
    },
    after,
    limit,
    graceSeconds,
  );

/** Pending deliveries past their scheduled attempt by more than the grace period. */
export const overdueDeliveries = (em: EntityManager, after: string, limit: number, graceSeconds: number) =>
  unsettledPage<{ id: string; account_id: string }>(
    em,
    {
      select: 'id, account_id',
      from: 'webhook_deliveries',
      unsettled: `status = 'pending'`,
      key: 'id',
      changedAt: 'next_attempt_at',
    },
    after,
    limit,
    graceSeconds,
  );

/** Exports being written, or ready and waiting for their link to expire (their workflow deletes the file then). */
export const unsettledExports = (em: EntityManager, after: string, limit: number, graceSeconds: number) =>
  unsettledPage<{ id: string; account_id: string }>(
    em,
    {
      select: 'id, account_id',
      from: 'exports',
      unsettled: `status <> 'expired'`,
      key: 'id',
      changedAt: 'updated_at',
    },
    after,
    limit,
    graceSeconds,
  );

/** Batches whose lines are not all placed. */
export const runningBatches = (em: EntityManager, after: string, limit: number, graceSeconds: number) =>
  unsettledPage<{ id: string; account_id: string }>(
    em,
    {
      select: 'id, account_id',
      from: 'batches',
      unsettled: `status = 'running'`,
      key: 'id',
      changedAt: 'updated_at',
    },
    after,
    limit,
    graceSeconds,
  );

export interface OpenEvmCheckoutRow {
  reference: string;
  derivation_index: number;
  created_at: Date;
  /** The deadline of the checkout's order or top-up; null when the order never committed. */
  expires_at: Date | null;
}

/**
 * EVM checkouts still watched for money: pending, or paid and not yet closed. Keyed by their
 * deposit index, as their watch is: a checkout's id is the secret half of its URL, and cursors
 * travel through workflow history. With their order's deadline, which a watch started again
 * counts its window from.
 */
export const openEvmCheckouts = (em: EntityManager, afterIndex: number, limit: number, graceSeconds: number) =>
  unsettledPage<OpenEvmCheckoutRow>(
    em,
    {
      select: 'c.reference, c.derivation_index, c.created_at, o.expires_at',
      from: 'evm_checkouts c left join orders o on o.id = c.reference',
      unsettled: `c.state in ('pending', 'paid')`,
      key: 'c.derivation_index',
      changedAt: 'c.created_at',
    },
    afterIndex,
    limit,
    graceSeconds,
  );

export interface LedgerCheckRow {
  id: string;
  balance: string;
  /** The sum of every ledger row of the account (the checkpoint's balance plus the rows after it). */
  ledger_sum: string;
  /** The first ledger row whose balanceAfter is not the previous one plus its amount. */
  first_break: string | null;
  /** The last ledger row read (through the checkpoint's, if none came after it), and its balanceAfter. */
  through_id: string;
  through_balance: string;
  /** Read from the account's first row: no checkpoint, a full check due, or an open alert. */
  full: boolean;
  /** Anything to write back: a row after the checkpoint was read, or the check was a full one. */
  advanced: boolean;
}

/**
 * A page of accounts with their balance, the sum of their ledger and the first break in its
 * balanceAfter chain, read in one statement: one snapshot, so a change in flight (balance and
 * ledger row are written in one transaction) is seen whole or not at all. Walks each account's
 * ledger on the (account_id, id) index, from the row after its checkpoint: the checkpoint's
 * balanceAfter stands for the sum of the rows through it, which a check found adding up. Ledger
 * rows are written with the account row locked (src/db/ledger-store.ts), so one account's rows
 * commit in the order of their ids and none can appear behind a checkpoint. A row changed after
 * it was checked is seen by the next full check, and an account with an open alert is always
 * checked in full, so its detail and its resolution are decided on the whole ledger.
 *
 * The full checks are spread over the period (`fullEverySeconds`; 0: every run): each account has
 * its own time in it (a hash of its id), and its full check comes due when that time has passed
 * since its last one, and never sooner than half a period after it. So a ledger is read in full at
 * most a period apart, and the accounts that were all checked in one run (the first) come due at
 * their own times over the next period, not all in one run again.
 */
export function ledgerChecks(em: EntityManager, after: string, limit: number, fullEverySeconds: number) {
  return em.execute<LedgerCheckRow[]>(
    // The page first, on the accounts' primary key, so a page costs its own accounts however many there are.
    `with page as (select id, balance from accounts where id > ?::uuid order by id limit ?),
     period as (select nullif(?::numeric, 0) as secs),
     base as (
       select p.id, p.balance, c.through_id, c.through_balance
         from page p
         cross join period
         -- Periods are counted from each account's own offset (its id's hashtext, an int4 moved to
         -- 0 .. 2^32 - 1, modulo the period); null everywhere when the period is 0.
         cross join lateral (select mod(hashtext(p.id::text)::numeric + 2147483648, period.secs) as secs) offset_in
         left join ledger_checkpoints c
           on c.account_id = p.id
          and (c.full_at > now() - make_interval(secs => (period.secs / 2)::float8)
               or floor((extract(epoch from now()) + offset_in.secs) / period.secs)
                  = floor((extract(epoch from c.full_at) + offset_in.secs) / period.secs))
          and not exists (select 1 from reconciler_repairs r
                           where r.kind = 'ledger' and r.resolved_at is null and r.subject_id = p.id::text))
     select p.id, p.balance::text as balance,
            (coalesce(p.through_balance, 0) + coalesce(l.total, 0))::text as ledger_sum,
            l.first_break::text as first_break,
            coalesce(l.last_id, p.through_id, 0)::text as through_id,
            coalesce(l.last_balance, p.through_balance, 0)::text as through_balance,
            p.through_id is null as "full",
            p.through_id is null or l.last_id is not null as advanced
       from base p
       left join lateral (
         select sum(x.amount) as total, min(x.id) filter (where x.balance_after <> x.before + x.amount) as first_break,
                max(x.id) as last_id, (array_agg(x.balance_after order by x.id desc))[1] as last_balance
           from (select id, amount, balance_after,
                        coalesce(lag(balance_after) over (order by id), p.through_balance, 0) as before
                   from ledger_transactions where account_id = p.id and id > coalesce(p.through_id, 0)) x
       ) l on true
      order by p.id`,
    [after, limit, fullEverySeconds],
  );
}

/**
 * Moves the checkpoints of accounts found adding up to the last row read, in one statement; a
 * full check also resets the time of the last one. Never moves a checkpoint back (two runs at once).
 */
export async function saveLedgerCheckpoints(em: EntityManager, rows: LedgerCheckRow[]): Promise<void> {
  if (rows.length === 0) return;
  // Postgres array literals: the driver would spread a JS array into separate parameters.
  const literal = (values: (string | boolean)[]) => `{${values.map((v) => `"${v}"`).join(',')}}`;
  await em.execute(
    // An incremental check's full_at is the least there is, so an update keeps the row's own (and
    // a row gone meanwhile comes back due for a full check).
    `insert into ledger_checkpoints as c (account_id, through_id, through_balance, full_at, checked_at)
     select u.account_id, u.through_id, u.through_balance, case when u.is_full then now() else '-infinity' end, now()
       from unnest(?::uuid[], ?::bigint[], ?::numeric[], ?::boolean[]) as u(account_id, through_id, through_balance, is_full)
     on conflict (account_id) do update
        set through_id = excluded.through_id, through_balance = excluded.through_balance,
            full_at = greatest(c.full_at, excluded.full_at), checked_at = now()
      where excluded.through_id >= c.through_id`,
    [
      literal(rows.map((r) => r.id)),
      literal(rows.map((r) => r.through_id)),
      literal(rows.map((r) => r.through_balance)),
      literal(rows.map((r) => r.full)),
    ],
  );
}

export interface RepairRecord {
  kind: string;
  subjectId: string;
  observed: string;
  action: 'started' | 'restarted' | 'gave_up' | 'alerted';
  workflowId: string | null;
  detail: Record<string, unknown>;
}

/**
 * Claims one repair: false when it was already made (the same orphan seen by another run), or, for
 * a ledger alert, when the account's alert is still open.
 */
export async function claimRepair(em: EntityManager, r: RepairRecord): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `insert into reconciler_repairs (kind, subject_id, observed, action, workflow_id, detail) values (?, ?, ?, ?, ?, ?::jsonb)
       on conflict do nothing returning id`,
    [r.kind, r.subjectId, r.observed, r.action, r.workflowId, JSON.stringify(r.detail)],
  );
  return rows.length > 0;
}

/** Takes back a claimed repair whose start failed, so a later run tries it again. */
export async function releaseRepair(
  em: EntityManager,
  r: Pick<RepairRecord, 'kind' | 'subjectId' | 'observed'>,
): Promise<void> {
  await em.execute('delete from reconciler_repairs where kind = ? and subject_id = ? and observed = ?', [
    r.kind,
    r.subjectId,
    r.observed,
  ]);
}

/** How often a subject's workflow was started again. */
export async function repairsOf(em: EntityManager, kind: string, subjectId: string): Promise<number> {
  const [row] = await em.execute<{ n: number }[]>(
    `select count(*)::int as n from reconciler_repairs where kind = ? and subject_id = ? and action in ('started', 'restarted')`,
    [kind, subjectId],
  );
  return row.n;
}

/** Marks the open ledger alerts of accounts that add up again as resolved; returns those accounts. */
export async function resolveLedgerAlerts(em: EntityManager, accountIds: string[]): Promise<string[]> {
  if (accountIds.length === 0) return [];
  const rows = await em.execute<{ subject_id: string }[]>(
    `update reconciler_repairs set resolved_at = now()
      where kind = 'ledger' and resolved_at is null and subject_id = any(?::text[]) returning subject_id`,
    // A Postgres array literal: the driver would spread a JS array into separate parameters.
    [`{${accountIds.map((id) => `"${id}"`).join(',')}}`],
  );
  return [...new Set(rows.map((r) => r.subject_id))];
}

/** Accounts whose ledger does not add up, as last seen (the alert's gauge). */
export async function openLedgerAlerts(em: EntityManager): Promise<number> {
  const [row] = await em.execute<{ n: number }[]>(
    `select count(distinct subject_id)::int as n from reconciler_repairs where kind = 'ledger' and resolved_at is null`,
  );
  return row.n;
}

export interface RepairHistoryRow {
  id: string;
  kind: string;
  subject_id: string;
  action: string;
  workflow_id: string | null;
  detail: Record<string, unknown>;
  created_at: Date;
  resolved_at: Date | null;
}

/** The reconciler's record, newest first. */
export function repairHistory(em: EntityManager, limit: number) {
  return em.execute<RepairHistoryRow[]>(
    `select id::text, kind, subject_id, action, workflow_id, detail, created_at, resolved_at
       from reconciler_repairs order by created_at desc, id desc limit ?`,
    [limit],
  );
}
