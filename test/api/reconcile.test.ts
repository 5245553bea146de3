import { randomBytes } from 'node:crypto';
import { payCheckout, sandboxControl, resetSandboxControl } from '../../src/providers/sandbox/sandbox-payments';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { recordPaymentConfirmation } from '../../src/db/payment-facts-store';
import { reconcileNow } from '../../src/services/reconcile';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { reconcileScheduleId, reconcileWorkflowId, type ReconcileTotals } from '../../src/contracts/reconcile-contract';
import { ensureReconcileSchedule } from '../../src/temporal/reconcile-schedule';
import { redemptionWorkflowId } from '../../src/contracts/redemptions-contract';
import { topupWorkflowId } from '../../src/contracts/topups-contract';
import type { reconcileWorkflow } from '../../workflows/reconcile-workflow';
import { sandboxUpstreamOf, reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV, waitForOrderStatus } from '../helpers/payments';
import { buyCode, redemptionReaches } from '../helpers/redemption';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// Issue 27 item 1: Postgres and Temporal always agree. Each lifecycle's orphan is made by hand
// (its workflow terminated, or never started) on real Postgres and Temporal, and the reconciler,
// run by its Temporal Schedule every PERIOD_S, starts it again within one period after the grace:
// the order expires, the top-up is credited, the procurement delivers, the redemption settles,
// the event is delivered; money is checked where it lives. A second run repairs nothing.
const PERIOD_S = 2;
const GRACE_S = 1;
/** One period after the grace, plus what a run and a loaded 2-core machine take. */
const WITHIN_MS = (GRACE_S + PERIOD_S) * 1000 + 6000;
const GIFT = 'prod_apple_gift_card_us_10';
const TEAM = 'prod_chatgpt_team_1m';
let h: Harness;
const upstream = sandboxUpstreamOf(() => h);
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    PAYMENT_WINDOW_SECONDS: '6',
    RECONCILE_SECONDS: String(PERIOD_S),
    RECONCILE_GRACE_SECONDS: String(GRACE_S),
    // Pages of two rows, so every check walks its keyset across pages.
    RECONCILE_PAGE_SIZE: '2',
    PROCUREMENT_RETRY_BASE_SECONDS: '5',
    PROCUREMENT_RETRY_CAP_SECONDS: '5',
    REDEMPTION_REFRESH_SECONDS: '1',
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  // The schedule outlives the harness otherwise, firing on the shared server for its task queue.
  await h?.services.temporal.client.schedule
    .getHandle(reconcileScheduleId(h.config.TEMPORAL_TASK_QUEUE))
    .delete()
    .catch(() => undefined);
  sandboxSupplierControl.reset();
  upstream.reset();
  resetSandboxControl();
  await receiver?.close();
  await h?.stop();
});

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const deps = () => ({ orm: h.services.orm, temporal: h.services.temporal, config: h.config, log: quiet });
const unique = (prefix: string) => `${prefix}-${randomBytes(3).toString('hex')}`;

async function terminate(workflowId: string): Promise<number> {
  await h.services.temporal.client.workflow.getHandle(workflowId).terminate('test: Temporal lost this workflow');
  return Date.now();
}

const statusOf = async (workflowId: string) =>
  (await h.services.temporal.client.workflow.getHandle(workflowId).describe()).status.name;

async function repairsOf(subjectId: string) {
  return h.services.orm.em
    .fork()
    .execute<
      { kind: string; action: string; workflow_id: string; detail: Record<string, unknown>; created_at: Date }[]
    >('select kind, action, workflow_id, detail, created_at from reconciler_repairs where subject_id = ? order by id', [
      subjectId,
    ]);
}

/** The reconciler's first repair of `subjectId`, asserted to come within one period of the orphan's grace. */
async function repairOf(subjectId: string, lostAt: number) {
  const [repair] = await eventually(
    async () => {
      const rows = await repairsOf(subjectId);
      return rows.length > 0 ? rows : undefined;
    },
    WITHIN_MS + 5000,
    200,
    `a repair of ${subjectId}`,
  );
  expect(new Date(repair.created_at).getTime() - lostAt).toBeLessThan(WITHIN_MS);
  return repair;
}

/** Every subject repaired above, checked once more at the end: still one repair each. */
const repairedSubjects: string[] = [];

async function runsSoFar(): Promise<number> {
  const d = await h.services.temporal.client.schedule
    .getHandle(reconcileScheduleId(h.config.TEMPORAL_TASK_QUEUE))
    .describe();
  return d.info.numActionsTaken;
}

test('the schedule: one per task queue, every RECONCILE_SECONDS, overlap skip; made sure of again, it is left as it is', async () => {
  const handle = h.services.temporal.client.schedule.getHandle(reconcileScheduleId(h.config.TEMPORAL_TASK_QUEUE));
  const d = await handle.describe();
  expect(d.spec.intervals).toEqual([expect.objectContaining({ every: PERIOD_S * 1000 })]);
  expect(d.policies.overlap).toBe('SKIP');
  expect(d.action).toMatchObject({
    type: 'startWorkflow',
    workflowType: 'reconcileWorkflow',
    taskQueue: h.config.TEMPORAL_TASK_QUEUE,
  });
  expect(await ensureReconcileSchedule(h.services.temporal, PERIOD_S)).toBe('unchanged');
  await eventually(async () => (await runsSoFar()) >= 1, 15_000, 250, 'a scheduled run');
});

test('a pending intent order whose workflow was terminated: its payment is followed again and the order expires, balance and ledger untouched', async () => {
  const { api, accountId } = await reseller(h, '100.00');
  const externalOrderId = unique('rec-intent');
  const placed = await api.post('/orders', { externalOrderId, productId: TEAM, qty: 1, payment: 'intent' });
  expect(placed.body.status).toBe('pending');
  const workflowId = orderWorkflowId(accountId, externalOrderId);
  const lostAt = await terminate(workflowId);

  const repair = await repairOf(placed.body.orderId, lostAt);
  expect(repair).toMatchObject({
    kind: 'order_payment',
    action: 'restarted',
    workflow_id: workflowId,
    detail: { previous: 'TERMINATED' },
  });
  // Nothing but the new run expires it (PAYMENT_WINDOW_SECONDS after it was placed).
  await waitForOrderStatus(api, placed.body.orderId, 'expired');
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money).toMatchObject({ balance: '100.00', spending: '0.00' });
  expect(money.rows).toHaveLength(1);
  repairedSubjects.push(placed.body.orderId);
});

test('a pending top-up whose workflow was terminated: followed again, its payment (no callback, status sync only) is credited once', async () => {
  const { api, accountId } = await reseller(h);
  const externalTopupId = unique('rec-topup');
  sandboxControl.suppressCallback = true;
  try {
    const opened = await api.post('/topup', { externalTopupId, amount: '12.50', currency: 'USDT' });
    expect(opened.body.status).toBe('pending');
    const workflowId = topupWorkflowId(accountId, externalTopupId);
    const lostAt = await terminate(workflowId);
    expect(await repairOf(opened.body.orderId, lostAt)).toMatchObject({
      kind: 'topup_payment',
      action: 'restarted',
      workflow_id: workflowId,
    });

    // The payer pays; only a run asking the provider learns of it.
    await payCheckout(
      h.services.orm.em.fork(),
      h.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(opened.body.checkoutUrl),
    );
    await eventually(async () => (await api.get('/balance')).body.balance === '12.50');
    const money = await expectLedgerMatchesBalance(h, accountId);
    expect(money.rows).toEqual([
      expect.objectContaining({ type: 'topup', amount: '12.50', order_id: opened.body.orderId }),
    ]);
    repairedSubjects.push(opened.body.orderId);
  } finally {
    resetSandboxControl();
  }
});

test('an expired top-up whose payment was confirmed but never settled (its run ended first): a new run is told it was paid and credits it once', async () => {
  const { api, accountId } = await reseller(h);
  const externalTopupId = unique('rec-paid-expired');
  sandboxControl.suppressCallback = true;
  try {
    const opened = await api.post('/topup', { externalTopupId, amount: '7.25', currency: 'USDT' });
    const orderId: string = opened.body.orderId;
    await waitForOrderStatus(api, orderId, 'expired');
    // What a lost notice leaves: the callback route recorded the payer's payment, and the run
    // ended without reading the signal that followed.
    const workflowId = topupWorkflowId(accountId, externalTopupId);
    await terminate(workflowId);
    const checkoutId = checkoutIdOf(opened.body.checkoutUrl);
    await payCheckout(h.services.orm.em.fork(), h.config.PAYMENT_CALLBACK_SECRET, checkoutId);
    await recordPaymentConfirmation(h.services.orm.em.fork(), { checkoutId, orderId, source: 'callback' });
    const lostAt = Date.now();
    expect((await api.get('/balance')).body.balance).toBe('0.00');

    expect(await repairOf(orderId, lostAt)).toMatchObject({
      kind: 'topup_payment',
      action: 'restarted',
      workflow_id: workflowId,
      detail: { previous: 'TERMINATED', status: 'expired', paymentConfirmed: true },
    });
    await waitForOrderStatus(api, orderId, 'delivered');
    const money = await expectLedgerMatchesBalance(h, accountId);
    expect(money.balance).toBe('7.25');
    expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '7.25', order_id: orderId })]);
    // Settled, the confirmation is closed, and the reconciler has nothing more to do for it.
    const confirmations = await h.services.orm.em
      .fork()
      .execute('select source, settled_at is not null as settled from payment_confirmations where order_id = ?', [
        orderId,
      ]);
    expect(confirmations).toEqual([{ source: 'callback', settled: true }]);
    const { findings } = await reconcileNow(deps(), { dryRun: true });
    expect(findings.filter((f) => f.subjectId === orderId)).toEqual([]);
    expect(await repairsOf(orderId)).toHaveLength(1);
  } finally {
    resetSandboxControl();
  }
});

test('a paid direct-code order whose procurement was terminated: the hand-off is started again and the order delivered, charged once', async () => {
  // The first round fails transiently, so the procurement waits out its backoff when it is lost.
  sandboxSupplierControl.script(GIFT, { steps: ['transient'], then: 'all' });
  const { api, accountId } = await reseller(h, '200.00');
  const placed = await api.post('/orders', { externalOrderId: unique('rec-gift'), productId: GIFT, qty: 2 });
  expect(placed.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing' });
  const orderId: string = placed.body.orderId;
  await eventually(async () =>
    sandboxSupplierControl.calls.some((c) => c.idempotencyKey.startsWith(orderId) && c.outcome === 'transient'),
  );
  const lostAt = await terminate(procurementWorkflowId(orderId));

  expect(await repairOf(orderId, lostAt)).toMatchObject({
    kind: 'procurement',
    action: 'restarted',
    workflow_id: procurementWorkflowId(orderId),
  });
  const delivered = await waitForOrderStatus(api, orderId, 'delivered');
  expect(delivered).toMatchObject({ fulfillmentStatus: 'delivered', fulfilledQuantity: 2 });
  expect(delivered.codes).toHaveLength(2);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows.filter((r) => r.order_id === orderId)).toEqual([
    expect.objectContaining({ amount: `-${placed.body.amount}` }),
  ]);
  expect(money.balanceCents).toBe(20_000 - Math.round(Number(placed.body.amount) * 100));
  await eventually(async () => (await statusOf(procurementWorkflowId(orderId))) === 'COMPLETED');
  repairedSubjects.push(orderId);
});

test('a processing redemption whose workflow was terminated: restarted, it settles with one upstream submission and one event', async () => {
  upstream.script(TEAM, { polls: 3 });
  const { api, accountId } = await reseller(h, '200.00');
  const { code } = await buyCode(api, TEAM);
  const submitted = await api.post('/redemptions', {
    code,
    redeemInfo: { account_id: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', email: 'jane@example.com' },
  });
  expect(submitted.body.status).toBe('pending');
  const redemptionId: string = submitted.body.redemptionId;
  const lostAt = await terminate(redemptionWorkflowId(redemptionId, 1));

  expect(await repairOf(redemptionId, lostAt)).toMatchObject({
    kind: 'redemption',
    action: 'restarted',
    detail: { attempt: 1, previous: 'TERMINATED' },
  });
  await redemptionReaches(api, redemptionId, 'fulfilled');
  expect(upstream.submissions.filter((s) => s.key === `${redemptionId}:1`)).toHaveLength(1);
  const events = await h.services.orm.em
    .fork()
    .execute<{ type: string }[]>(`select type from events where account_id = ? and type like 'redemption.%'`, [
      accountId,
    ]);
  expect(events).toEqual([{ type: 'redemption.fulfilled' }]);
  await expectLedgerMatchesBalance(h, accountId);
  repairedSubjects.push(redemptionId);
});

test('a webhook delivery whose workflow was never started: started, the event is delivered once', async () => {
  const { api, accountId } = await reseller(h);
  expect((await api.put('/webhook', { url: receiver.url })).status).toBe(200);
  const eventId = unique('evt_rec');
  const deliveryId = unique('whd_rec');
  const em = h.services.orm.em.fork();
  // Persisted as the relay would have, and then its start lost (a crash after the commit).
  await em.execute(
    `insert into events (id, account_id, type, payload, dispatched_at) values (?, ?, 'webhook.test', '{"message":"lost"}', now())`,
    [eventId, accountId],
  );
  await em.execute(
    `insert into webhook_deliveries (id, event_id, account_id, status, next_attempt_at) values (?, ?, ?, 'pending', now())`,
    [deliveryId, eventId, accountId],
  );
  const lostAt = Date.now();

  expect(await repairOf(deliveryId, lostAt)).toMatchObject({
    kind: 'webhook_delivery',
    action: 'started',
    detail: { previous: 'missing' },
  });
  const [got] = await receiver.waitFor(1, (all) => all.filter((r) => r.body?.eventId === eventId));
  expect(got.headers['x-wholesale-delivery-id']).toBe(`${deliveryId}.1`);
  await eventually(async () => {
    const d = (await api.get('/webhook/deliveries')).body.deliveries.find((x: any) => x.id === deliveryId);
    return d?.status === 'succeeded' && d.attempts === 1;
  });
  repairedSubjects.push(deliveryId);
  expect(receiver.received.filter((r) => r.body?.eventId === eventId)).toHaveLength(1);
});

test('a second run repairs nothing: after two more scheduled runs each orphan was repaired once, and a run now finds nothing to do', async () => {
  expect(repairedSubjects).toHaveLength(5);
  const runs = await runsSoFar();
  // With overlap skip, the second of these started only after the first (wholly after every repair) ended.
  await eventually(async () => (await runsSoFar()) >= runs + 2, 20_000, 250, 'two more scheduled runs');
  for (const subjectId of repairedSubjects) {
    expect([subjectId, (await repairsOf(subjectId)).map((r) => r.action)]).toEqual([
      subjectId,
      [expect.stringMatching(/^(re)?started$/)],
    ]);
  }
  expect((await reconcileNow(deps(), { dryRun: true })).findings).toEqual([]);
  const { totals, findings } = await reconcileNow(deps());
  expect(findings).toEqual([]);
  expect(totals).toMatchObject({ repaired: 0, alerted: 0, failed: 0 });
});

test('a run bounded to one step continues as new where it stands and still covers every check', async () => {
  const { client } = h.services.temporal;
  const workflowId = `${reconcileWorkflowId(h.config.TEMPORAL_TASK_QUEUE)}-bounded-${randomBytes(3).toString('hex')}`;
  const handle = await client.workflow.start<typeof reconcileWorkflow>('reconcileWorkflow', {
    workflowId,
    taskQueue: h.config.TEMPORAL_TASK_QUEUE,
    args: [{ stepsPerRun: 1 }],
  });
  const result: ReconcileTotals = await handle.result();
  expect(result).toMatchObject({ repaired: 0, alerted: 0, failed: 0, incomplete: [] });
  // Every account was checked across the runs (the ledger pages two at a time).
  const [{ n }] = await h.services.orm.em.fork().execute<{ n: number }[]>('select count(*)::int as n from accounts');
  expect(result.checked).toBeGreaterThanOrEqual(n);
  expect((await client.workflow.getHandle(workflowId, handle.firstExecutionRunId).describe()).status.name).toBe(
    'CONTINUED_AS_NEW',
  );
});
