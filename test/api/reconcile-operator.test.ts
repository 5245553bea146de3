import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import { reconcileNow } from '../../src/services/reconcile';
import { reconcileScheduleId } from '../../src/contracts/reconcile-contract';
import { deliveryWorkflowId } from '../../src/contracts/webhooks-contract';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// Issue 27 item 1, what operators see. Money is never "repaired": a ledger that does not add up
// (its sum is not the balance, or its balanceAfter chain breaks) is one alert and one log line
// naming the account, the metric is raised, nothing changes, and the account keeps working.
// `npx wholesale reconcile --dry-run | --history` on a real process; two reconcilers at once
// repair once; a subject lost again and again is given up. This harness creates no schedule
// (RECONCILE_SECONDS=0): every run here is one the test makes.
const root = resolve(__dirname, '..', '..');
const run = promisify(execFile);
let h: Harness;
let receiver: Receiver;
/** An account whose balanceAfter chain the ledger tests break (and leave broken). */
let brokenChain: string;

beforeAll(async () => {
  h = await startHarness({ WEBHOOK_ALLOW_INSECURE_URLS: 'true', RECONCILE_GRACE_SECONDS: '30' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

type Line = { level: string; message: string; meta?: Record<string, unknown> };

/** One reconciliation in this process, with the lines it logged. */
async function reconcile(opts: { dryRun?: boolean } = {}) {
  const lines: Line[] = [];
  const at = (level: string) => (message: string, meta?: Record<string, unknown>) =>
    void lines.push({ level, message, meta });
  const report = await reconcileNow(
    {
      orm: h.services.orm,
      temporal: h.services.temporal,
      config: h.config,
      log: { info: at('info'), warn: at('warn'), error: at('error') },
    },
    opts,
  );
  return { ...report, lines };
}

async function ledgerMismatchesGauge(): Promise<number> {
  const text = await fetch(`${h.baseUrl}/metrics`).then((r) => r.text());
  return Number(/^wholesale_reconciler_ledger_mismatches(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1]);
}

/** Everything Postgres holds of an account's money, to show that nothing moved. */
async function moneyOf(accountId: string) {
  const { balance, spending, rows } = await ledgerOf(h, accountId);
  return { balance, spending, rows };
}

async function wholesale(...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, [join(root, 'bin', 'wholesale.js'), ...args], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_ADDRESS: h.config.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: h.config.TEMPORAL_NAMESPACE,
      TEMPORAL_TASK_QUEUE: h.config.TEMPORAL_TASK_QUEUE,
      TEMPORAL_PAYLOAD_KEYS: h.config.TEMPORAL_PAYLOAD_KEYS,
      STATE_DIR: mkdtempSync(join(tmpdir(), 'reconcile-cli-')),
      LOG_LEVEL: 'silent',
    },
  });
  return JSON.parse(stdout);
}

test('RECONCILE_SECONDS=0: the worker process creates no schedule', async () => {
  await expect(
    h.services.temporal.client.schedule.getHandle(reconcileScheduleId(h.config.TEMPORAL_TASK_QUEUE)).describe(),
  ).rejects.toBeInstanceOf(ScheduleNotFoundError);
});

describe('a ledger that does not add up is alerted, never repaired', () => {
  let offBalance: { accountId: string; api: Awaited<ReturnType<typeof reseller>>['api'] };

  test('a balance off its ledger and a broken balanceAfter chain: one error line each, naming the account; the metric says 2; nothing changes', async () => {
    offBalance = await reseller(h, '50.00');
    const chain = await reseller(h, '20.00');
    brokenChain = chain.accountId;
    await h.account('5.00'); // adds up: never named
    const em = h.services.orm.em.fork();
    await em.execute('update accounts set balance = balance + 5 where id = ?', [offBalance.accountId]);
    await em.execute(
      `insert into ledger_transactions (account_id, type, amount, balance_after, idempotency_key) values (?, 'adjust', 1.00, 21.00, 'test-second')`,
      [brokenChain],
    );
    await em.execute('update accounts set balance = 21.00 where id = ?', [brokenChain]);
    // The first row's balanceAfter is rewritten: the sum still equals the balance, only the chain shows it.
    await em.execute(
      'update ledger_transactions set balance_after = 19.00 where id = (select min(id) from ledger_transactions where account_id = ?)',
      [brokenChain],
    );
    const before = { off: await moneyOf(offBalance.accountId), chain: await moneyOf(brokenChain) };

    const dry = await reconcile({ dryRun: true });
    expect(
      dry.findings
        .filter((f) => f.kind === 'ledger')
        .map((f) => [f.subjectId, f.action])
        .sort(),
    ).toEqual(
      [
        [offBalance.accountId, 'would_alert'],
        [brokenChain, 'would_alert'],
      ].sort(),
    );
    expect(dry.lines).toEqual([]);
    expect(await ledgerMismatchesGauge()).toBe(0);

    const first = await reconcile();
    const errors = first.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(2);
    expect(errors.find((l) => l.meta?.accountId === offBalance.accountId)?.meta).toMatchObject({
      balance: '55.00',
      ledgerSum: '50.00',
      differenceCents: 500,
      firstBrokenLedgerId: null,
    });
    expect(errors.find((l) => l.meta?.accountId === brokenChain)?.meta).toMatchObject({
      balance: '21.00',
      ledgerSum: '21.00',
      differenceCents: 0,
      firstBrokenLedgerId: expect.any(String),
    });
    expect(first.totals).toMatchObject({ repaired: 0, alerted: 2 });
    expect(await ledgerMismatchesGauge()).toBe(2);
    expect({ off: await moneyOf(offBalance.accountId), chain: await moneyOf(brokenChain) }).toEqual(before);
  });

  test("the account's orders keep working, and the next run alerts nothing new: the alert is still open", async () => {
    const placed = await offBalance.api.post('/orders', {
      externalOrderId: 'still-works',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    expect(placed.body.status).toBe('delivered');
    const money = await ledgerOf(h, offBalance.accountId);
    expect(money.balanceCents - money.sumCents).toBe(500);
    // The order's ledger row goes on from the balance, so the chain now breaks there too: one problem.
    expect(money.chainOk).toBe(false);

    const again = await reconcile();
    expect(again.lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(again.totals.alerted).toBe(0);
    expect(await ledgerMismatchesGauge()).toBe(2);
  });

  test('put right by hand, the account adds up again: the alert resolves with one info line', async () => {
    const em = h.services.orm.em.fork();
    await em.execute('update accounts set balance = balance - 5 where id = ?', [offBalance.accountId]);
    // The rows written after the tampering went on from the wrong balance.
    await em.execute(
      `update ledger_transactions set balance_after = balance_after - 5
                       where account_id = ? and id > (select min(id) from ledger_transactions where account_id = ?)`,
      [offBalance.accountId, offBalance.accountId],
    );
    await expectLedgerMatchesBalance(h, offBalance.accountId);
    const fixed = await reconcile();
    expect(fixed.lines).toEqual([
      { level: 'info', message: 'ledger adds up again', meta: { accountId: offBalance.accountId } },
    ]);
    expect(await ledgerMismatchesGauge()).toBe(1);
  });
});

test('npx wholesale reconcile --dry-run shows what it would start and starts nothing; reconcile repairs; --history shows what was done', async () => {
  const { api, accountId } = await reseller(h);
  expect((await api.put('/webhook', { url: receiver.url })).status).toBe(200);
  const em = h.services.orm.em.fork();
  await em.execute(
    `insert into events (id, account_id, type, payload, dispatched_at) values ('evt_cli_lost', ?, 'webhook.test', '{"message":"lost"}', now())`,
    [accountId],
  );
  // Due five minutes ago, past the grace period: its start was lost.
  await em.execute(
    `insert into webhook_deliveries (id, event_id, account_id, status, next_attempt_at) values ('whd_cli_lost', 'evt_cli_lost', ?, 'pending', now() - interval '5 minutes')`,
    [accountId],
  );

  const dry = await wholesale('reconcile', '--dry-run');
  expect(dry).toMatchObject({ dryRun: true, repaired: 0 });
  expect(dry.findings).toContainEqual({
    kind: 'webhook_delivery',
    subjectId: 'whd_cli_lost',
    action: 'would_start',
    workflowId: deliveryWorkflowId('whd_cli_lost'),
    workflow: 'missing',
  });
  expect(dry.findings).toContainEqual(
    expect.objectContaining({ kind: 'ledger', subjectId: brokenChain, action: 'would_alert' }),
  );
  await expect(
    h.services.temporal.client.workflow.getHandle(deliveryWorkflowId('whd_cli_lost')).describe(),
  ).rejects.toBeInstanceOf(WorkflowNotFoundError);

  const done = await wholesale('reconcile');
  expect(done).toMatchObject({ dryRun: false, repaired: 1, alerted: 0 });
  await receiver.waitFor(1, (all) => all.filter((r) => r.body?.eventId === 'evt_cli_lost'));
  await eventually(
    async () =>
      (await api.get('/webhook/deliveries')).body.deliveries.find((d: any) => d.id === 'whd_cli_lost')?.status ===
      'succeeded',
  );
  expect((await wholesale('reconcile', '--dry-run')).findings.filter((f: any) => f.kind !== 'ledger')).toEqual([]);

  const history = await wholesale('reconcile', '--history', '--limit', '10');
  expect(history[0]).toMatchObject({
    kind: 'webhook_delivery',
    subjectId: 'whd_cli_lost',
    action: 'started',
    workflowId: deliveryWorkflowId('whd_cli_lost'),
    detail: { previous: 'missing' },
  });
  const alerts = history.filter((r: any) => r.kind === 'ledger');
  expect(alerts).toHaveLength(2);
  expect(alerts).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ subjectId: brokenChain, action: 'alerted', resolvedAt: null }),
      expect.objectContaining({ action: 'alerted', resolvedAt: expect.any(String) }),
    ]),
  );
}, 60_000);

/** A pending webhook delivery whose start was lost, due five minutes ago (past the grace period). */
async function lostDelivery(id: string) {
  const { accountId } = await h.account();
  const em = h.services.orm.em.fork();
  await em.execute(
    `insert into events (id, account_id, type, payload, dispatched_at) values (?, ?, 'webhook.test', '{"message":"lost"}', now())`,
    [`evt_${id}`, accountId],
  );
  await em.execute(
    `insert into webhook_deliveries (id, event_id, account_id, status, next_attempt_at) values (?, ?, ?, 'pending', now() - interval '5 minutes')`,
    [id, `evt_${id}`, accountId],
  );
}

test('two reconcilers at once (the schedule and an operator) start one orphan once', async () => {
  await lostDelivery('whd_twice');
  const [a, b] = await Promise.all([reconcile(), reconcile()]);
  const started = [...a.findings, ...b.findings].filter((f) => f.subjectId === 'whd_twice');
  expect(started).toEqual([expect.objectContaining({ kind: 'webhook_delivery', action: 'started' })]);
  const rows = await h.services.orm.em
    .fork()
    .execute('select action from reconciler_repairs where subject_id = ?', ['whd_twice']);
  expect(rows).toEqual([{ action: 'started' }]);
});

test('a subject whose workflow keeps being lost is started three times, then given up with one error line and left alone', async () => {
  await lostDelivery('whd_cursed');
  const em = h.services.orm.em.fork();
  // Three earlier repairs of it, each run lost again since.
  for (const run of ['run-1', 'run-2', 'run-3']) {
    await em.execute(
      `insert into reconciler_repairs (kind, subject_id, observed, action, workflow_id) values ('webhook_delivery', 'whd_cursed', ?, 'restarted', ?)`,
      [run, deliveryWorkflowId('whd_cursed')],
    );
  }
  const first = await reconcile();
  expect(first.findings.filter((f) => f.subjectId === 'whd_cursed')).toEqual([
    expect.objectContaining({ action: 'gave_up', workflow: 'missing' }),
  ]);
  expect(first.lines.filter((l) => l.level === 'error' && l.meta?.subjectId === 'whd_cursed')).toHaveLength(1);
  await expect(
    h.services.temporal.client.workflow.getHandle(deliveryWorkflowId('whd_cursed')).describe(),
  ).rejects.toBeInstanceOf(WorkflowNotFoundError);

  const second = await reconcile();
  expect(second.findings.filter((f) => f.subjectId === 'whd_cursed')).toEqual([]);
  expect(second.lines.filter((l) => l.meta?.subjectId === 'whd_cursed')).toEqual([]);
});
