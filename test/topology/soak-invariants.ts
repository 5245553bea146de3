// The soak's invariants, checked after the traffic from what Postgres holds,
// what the API answers and what Temporal lists. Each check adds to one `Findings`: a broken
// invariant is a line in `violations`, what was looked at is a number in `counts`.
import type { Client as PgClient } from 'pg';
import type { Received } from './hook-receivers';
import type { Account, Ack, HttpStat } from './soak-model';

export interface Findings {
  violations: string[];
  counts: Record<string, number | string>;
}

/** Everything the checks read from Postgres for the soak's accounts, in one go. */
export async function readSnapshot(c: PgClient, accounts: string[]) {
  return {
    accounts: (await c.query('select id, balance from accounts where id = any($1)', [accounts])).rows,
    ledger: (
      await c.query(
        'select account_id, type, amount, balance_after, order_id from ledger_transactions where account_id = any($1) order by account_id, id',
        [accounts],
      )
    ).rows,
    orders: (
      await c.query(
        `select id, account_id, kind, external_order_id, external_topup_id, payment, status, amount, qty, delivery_type, fulfillment_status, fulfilled_quantity, checkout_id from orders where account_id = any($1)`,
        [accounts],
      )
    ).rows,
    checkouts: (
      await c.query(
        `select s.id, s.status from sandbox_checkouts s join orders o on o.checkout_id = s.id where o.account_id = any($1)`,
        [accounts],
      )
    ).rows,
    codes: (await c.query('select code, order_id, voided from issued_codes where account_id = any($1)', [accounts]))
      .rows,
    dupCodes: (await c.query('select code, count(*) as n from issued_codes group by code having count(*) > 1')).rows,
    supplier: (await c.query(`select idempotency_key, requested, codes from sandbox_supplier_orders`)).rows,
    events: (
      await c.query(
        `select e.id, e.account_id, e.type, e.dispatched_at, d.id as delivery_id, d.status as delivery_status, d.attempts, d.next_attempt_at, d.last_status_code, d.last_error
                              from events e left join webhook_deliveries d on d.event_id = e.id where e.account_id = any($1)`,
        [accounts],
      )
    ).rows,
    redemptions: (await c.query('select id, status from redemptions where account_id = any($1)', [accounts])).rows,
  };
}

export type Snapshot = Awaited<ReturnType<typeof readSnapshot>>;

/** What the soak itself saw: its accounts, the answers it got, the webhook requests it received. */
export interface SoakRecord {
  accounts: Account[];
  acks: Ack[];
  received: Received[];
  /** Whether the accounts had webhook receivers configured. */
  webhooks: boolean;
  webhookMaxAttempts: number;
  /** After a drain: nothing may still be pending. */
  strict: boolean;
}

const cents = (s: string | number) => Math.round(Number(s) * 100);

/** The invariants over Postgres: money, orders, codes, the supplier, redemptions, webhooks. */
export function checkStoredState(db: Snapshot, soak: SoakRecord, out: Findings): void {
  checkMoney(db, out);
  checkOrders(db, soak, out);
  checkCodesAndSupplier(db, out);
  checkRedemptions(db, soak, out);
  checkWebhooks(db, soak, out);
}

/** Every ledger sums to its balance, the balanceAfter chain is unbroken, never below zero. */
function checkMoney(db: Snapshot, { violations: v, counts }: Findings): void {
  const ledgerBy = groupBy(db.ledger, (r) => r.account_id);
  for (const a of db.accounts) {
    const rows = ledgerBy.get(a.id) ?? [];
    let running = 0;
    for (const [i, r] of rows.entries()) {
      running += cents(r.amount);
      if (running !== cents(r.balance_after)) {
        v.push(
          `account ${a.id}: balanceAfter chain broken at ledger row ${i} (${r.type} ${r.amount}: running ${running / 100}, balanceAfter ${r.balance_after})`,
        );
        break;
      }
      if (cents(r.balance_after) < 0)
        v.push(`account ${a.id}: balance below zero (${r.balance_after}) after ${r.type}`);
    }
    if (running !== cents(a.balance))
      v.push(`account ${a.id}: ledger sums to ${running / 100}, balance is ${a.balance}`);
    if (cents(a.balance) < 0) v.push(`account ${a.id}: balance ${a.balance} below zero`);
  }
  counts['ledger rows'] = db.ledger.length;
}

/** Each acknowledged order and top-up exists exactly once, with its debit or credit. */
function checkOrders(db: Snapshot, soak: SoakRecord, { violations: v, counts }: Findings): void {
  const ledgerByOrder = groupBy(
    db.ledger.filter((r) => r.order_id),
    (r) => r.order_id as string,
  );
  const checkoutPaid = new Map(db.checkouts.map((c) => [c.id, c.status === 'paid']));
  let acked = 0;
  for (const ack of soak.acks) {
    if (ack.kind === 'redemption') continue;
    acked++;
    const matching = db.orders.filter(
      (o) =>
        o.account_id === ack.accountId &&
        (ack.kind === 'topup' ? o.external_topup_id : o.external_order_id) === ack.externalId,
    );
    if (matching.length !== 1) {
      v.push(`acknowledged ${ack.kind} ${ack.externalId} (${ack.id}): ${matching.length} rows in Postgres`);
      continue;
    }
    if (matching[0].id !== ack.id)
      v.push(`acknowledged ${ack.kind} ${ack.externalId}: answered ${ack.id}, Postgres holds ${matching[0].id}`);
  }
  counts['acknowledged orders and top-ups'] = acked;
  counts['acknowledged answers (incl. racing and duplicate)'] = soak.acks.reduce((n, a) => n + a.answers, 0);
  for (const o of db.orders) {
    const rows = ledgerByOrder.get(o.id) ?? [];
    const by = (t: string) => rows.filter((r) => r.type === t);
    const paid = o.checkout_id ? checkoutPaid.get(o.checkout_id) === true : false;
    if (o.kind === 'purchase' && o.payment === 'balance') {
      const debits = by('purchase');
      if (debits.length !== 1 || cents(debits[0].amount) !== -cents(o.amount))
        v.push(
          `order ${o.id} (balance): ${debits.length} debit rows ${debits.map((d) => d.amount).join(',')} for amount ${o.amount}`,
        );
      const refunded = by('refund').reduce((n, r) => n + cents(r.amount), 0);
      if (refunded > cents(o.amount)) v.push(`order ${o.id}: refunded ${refunded / 100} > amount ${o.amount}`);
    } else if (o.kind === 'purchase') {
      if (by('purchase').length) v.push(`order ${o.id} (intent): a balance debit`);
      if (paid && !['paid', 'delivered', 'refunded'].includes(o.status))
        v.push(`order ${o.id} (intent): checkout paid, order ${o.status}`);
      if (!paid && !['pending', 'expired'].includes(o.status))
        v.push(`order ${o.id} (intent): checkout not paid, order ${o.status}`);
    } else {
      const credits = by('topup');
      if (paid && (credits.length !== 1 || cents(credits[0].amount) !== cents(o.amount)))
        v.push(`top-up ${o.id}: paid, ${credits.length} credit rows`);
      if (!paid && credits.length) v.push(`top-up ${o.id}: not paid, ${credits.length} credit rows`);
      if (paid !== (o.status === 'delivered'))
        v.push(`top-up ${o.id}: checkout ${paid ? 'paid' : 'unpaid'}, status ${o.status}`);
    }
    if (soak.strict && o.status === 'pending') v.push(`order ${o.id} still pending after the drain`);
  }
  counts['orders in Postgres'] = db.orders.length;
  for (const [k, n] of Object.entries(
    countBy(
      db.orders,
      (o) => `${o.kind}/${o.payment}/${o.status}${o.fulfillment_status ? `/${o.fulfillment_status}` : ''}`,
    ),
  ))
    counts[`orders ${k}`] = n;
  counts['checkouts paid (Postgres)'] = db.checkouts.filter((c) => c.status === 'paid').length;
}

/**
 * Codes: none issued twice; a delivered order holds exactly its quantity. The supplier: each
 * purchase once; what it sold is exactly what the orders hold.
 */
function checkCodesAndSupplier(db: Snapshot, { violations: v, counts }: Findings): void {
  if (db.dupCodes.length) v.push(`codes issued twice: ${db.dupCodes.map((d) => d.code.slice(0, 6) + '…').join(', ')}`);
  const codesByOrder = groupBy(
    db.codes.filter((c) => !c.voided),
    (c) => c.order_id,
  );
  for (const o of db.orders.filter((x) => x.kind === 'purchase' && x.status === 'delivered')) {
    const n = codesByOrder.get(o.id)?.length ?? 0;
    if (n !== o.qty) v.push(`order ${o.id} delivered with ${n} codes for qty ${o.qty}`);
  }
  counts['codes issued'] = db.codes.length;

  const supplierCodes = new Map<string, string>();
  for (const s of db.supplier) {
    for (const code of s.codes as string[]) {
      if (supplierCodes.has(code))
        v.push(`supplier code sold twice (${supplierCodes.get(code)} and ${s.idempotency_key})`);
      supplierCodes.set(code, s.idempotency_key);
    }
  }
  for (const o of db.orders.filter((x) => x.delivery_type === 'direct_code' && x.kind === 'purchase')) {
    const sold = db.supplier
      .filter((s) => String(s.idempotency_key).startsWith(`${o.id}:`))
      .flatMap((s) => s.codes as string[]);
    if (sold.length !== o.fulfilled_quantity)
      v.push(`order ${o.id}: supplier sold ${sold.length} units, fulfilledQuantity ${o.fulfilled_quantity}`);
    if (sold.length > o.qty) v.push(`order ${o.id}: supplier sold ${sold.length} units for qty ${o.qty}`);
    const held = new Set((codesByOrder.get(o.id) ?? []).map((c) => c.code));
    if (o.status === 'delivered' && (sold.length !== held.size || sold.some((c) => !held.has(c))))
      v.push(`order ${o.id}: delivered codes differ from the supplier's sale`);
  }
  counts['supplier purchases'] = db.supplier.filter((s) =>
    db.orders.some((o) => String(s.idempotency_key).startsWith(`${o.id}:`)),
  ).length;
}

/** Each acknowledged redemption exists (every answer for a code named the same one: see Ack). */
function checkRedemptions(db: Snapshot, soak: SoakRecord, { violations: v, counts }: Findings): void {
  const redemptionIds = new Map(db.redemptions.map((r) => [r.id, r.status]));
  for (const ack of soak.acks.filter((a) => a.kind === 'redemption')) {
    if (!redemptionIds.has(ack.id)) v.push(`acknowledged redemption ${ack.id} missing in Postgres`);
    else if (soak.strict && !['fulfilled', 'failed'].includes(redemptionIds.get(ack.id)!))
      v.push(`redemption ${ack.id} still ${redemptionIds.get(ack.id)} after the drain`);
  }
  for (const [k, n] of Object.entries(countBy(db.redemptions, (r) => r.status))) counts[`redemptions ${k}`] = n;
}

/**
 * Every event has one delivery, delivered (200 receivers) or failed/in backoff, with no more
 * attempts than WEBHOOK_MAX_ATTEMPTS, and every request carried the event's own id.
 */
function checkWebhooks(db: Snapshot, soak: SoakRecord, { violations: v, counts }: Findings): void {
  const hookOf = new Map(soak.accounts.map((a) => [a.accountId, a.hook]));
  const events = soak.webhooks ? db.events : db.events.filter((e) => e.delivery_id);
  const seenEvents = new Set(soak.received.filter((r) => r.mode === 'ok').map((r) => r.eventIdHeader));
  const maxAttempts = soak.webhookMaxAttempts;
  for (const e of events) {
    const mode = hookOf.get(e.account_id);
    if (!e.delivery_id) {
      v.push(`event ${e.id} (${e.type}): no delivery${e.dispatched_at ? '' : ' (still in the outbox)'}`);
      continue;
    }
    // An attempt is claimed before its POST: one cut short by a killed worker is sent again as
    // itself, and a run started again spends what is left of the budget (the soak never retries by hand).
    if (e.attempts > maxAttempts)
      v.push(
        `event ${e.id}: delivery ${e.delivery_status} after ${e.attempts} attempts, more than WEBHOOK_MAX_ATTEMPTS (${maxAttempts})`,
      );
    if (mode === 'ok') {
      if (e.delivery_status !== 'succeeded' && !(e.delivery_status === 'pending' && !soak.strict))
        v.push(
          `event ${e.id} to a 200 receiver: delivery ${e.delivery_status} after ${e.attempts} attempts (last: ${e.last_status_code ?? e.last_error ?? 'none'}; the receiver saw it ${soak.received.filter((r) => r.eventIdHeader === e.id).length} times)`,
        );
      if (e.delivery_status === 'succeeded' && !seenEvents.has(e.id))
        v.push(`event ${e.id}: delivered, the receiver never saw it`);
    } else {
      if (e.delivery_status === 'succeeded') v.push(`event ${e.id} to a ${mode} receiver: marked succeeded`);
      if (e.delivery_status === 'failed' && e.attempts < maxAttempts)
        v.push(`event ${e.id}: failed after ${e.attempts} attempts, fewer than ${maxAttempts}`);
      if (e.delivery_status === 'pending' && (soak.strict || !e.next_attempt_at))
        v.push(
          `event ${e.id} to a ${mode} receiver: pending ${e.next_attempt_at ? 'in backoff' : 'with no next attempt'}${soak.strict ? ' after the drain' : ''}`,
        );
    }
  }
  for (const r of soak.received) {
    if (r.mode === 'redirected') v.push('a webhook redirect was followed');
    else if (!r.eventIdHeader || r.eventIdHeader !== r.bodyEventId)
      v.push(`a webhook request's event id header ${r.eventIdHeader} differs from its body ${r.bodyEventId}`);
  }
  const deliveryOfEvent = new Map(events.map((e) => [e.id, e.delivery_id]));
  for (const r of soak.received) {
    // The header is `<deliveryId>.<attempt>`: every attempt of one event is the same delivery.
    const deliveryId = r.deliveryIdHeader?.replace(/\.\d+$/, '');
    if (r.eventIdHeader && deliveryOfEvent.has(r.eventIdHeader) && deliveryOfEvent.get(r.eventIdHeader) !== deliveryId)
      v.push(
        `event ${r.eventIdHeader} sent under delivery ${r.deliveryIdHeader}, Postgres has ${deliveryOfEvent.get(r.eventIdHeader)}`,
      );
  }
  counts.events = events.length;
  for (const [k, n] of Object.entries(countBy(events, (e) => `${hookOf.get(e.account_id)}/${e.delivery_status}`)))
    counts[`deliveries ${k}`] = n;
  counts['webhook requests received'] = soak.received.length;
}

/** Balances and orders read back through the API as Postgres holds them. */
export async function checkApiReadback(
  db: Snapshot,
  soak: Pick<SoakRecord, 'accounts' | 'acks'>,
  get: (account: Account, path: string) => Promise<HttpStat>,
  { violations: v, counts }: Findings,
): Promise<void> {
  for (const a of soak.accounts) {
    const res = await get(a, '/balance');
    const dbBalance = db.accounts.find((x) => x.id === a.accountId)?.balance;
    if (res.status !== 200 || cents(res.body.balance) !== cents(dbBalance))
      v.push(`GET /balance of ${a.accountId}: ${res.status} ${res.body?.balance}, Postgres ${dbBalance}`);
  }
  const ordersById = new Map(db.orders.map((o) => [o.id, o]));
  const sample = soak.acks.filter((a) => a.kind !== 'redemption').slice(0, 200);
  for (const ack of sample) {
    const account = soak.accounts.find((a) => a.accountId === ack.accountId)!;
    const res = await get(account, `/orders/${ack.id}`);
    const row = ordersById.get(ack.id);
    if (res.status !== 200 || res.body.status !== row?.status)
      v.push(`GET /orders/${ack.id}: ${res.status} ${res.body?.status}, Postgres ${row?.status}`);
  }
  counts['orders read back through the API'] = sample.length;
}

export interface ListedWorkflow {
  workflowId: string;
  runId: string;
  status: string;
  type: string;
}

/** An activity of a running workflow, as describe() lists it. */
interface PendingActivity {
  attempt?: number | null;
  activityType?: { name?: string | null } | null;
  lastFailure?: { message?: string | null } | null;
}

/**
 * Temporal: nothing failed, terminated or timed out; no running workflow retrying an activity;
 * with `strict`, nothing running but procurements in needs_attention (they wait for support).
 */
export async function checkWorkflows(
  db: Snapshot,
  workflows: ListedWorkflow[],
  pendingActivities: (w: ListedWorkflow) => Promise<PendingActivity[]>,
  strict: boolean,
  { violations: v, counts }: Findings,
): Promise<Record<string, number>> {
  const attention = new Set(
    db.orders.filter((o) => o.fulfillment_status === 'needs_attention').map((o) => `procure:${o.id}`),
  );
  for (const w of workflows) {
    if (['FAILED', 'TERMINATED', 'TIMED_OUT', 'CANCELLED'].includes(w.status))
      v.push(`workflow ${w.workflowId} (${w.type}) ${w.status}`);
    if (w.status !== 'RUNNING') continue;
    const failing = (await pendingActivities(w)).filter((p) => (p.attempt ?? 0) > 3);
    if (failing.length)
      v.push(
        `workflow ${w.workflowId}: activity ${failing[0].activityType?.name} at attempt ${failing[0].attempt} (${failing[0].lastFailure?.message ?? ''})`,
      );
    if (strict && !attention.has(w.workflowId))
      v.push(`workflow ${w.workflowId} (${w.type}) still running after the drain`);
  }
  counts['workflows'] = workflows.length;
  return countBy(workflows, (w) => `${w.type} ${w.status}`);
}

function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    const list = m.get(k);
    if (list) list.push(x);
    else m.set(k, [x]);
  }
  return m;
}

export function countBy<T>(xs: T[], key: (x: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
}
