import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { paymentNotifiedSignal } from '../../src/contracts/payments-contract';
import { orderStateQuery, orderWorkflowId } from '../../src/contracts/orders-contract';
import { procurementWorkflowId, refundUpdate } from '../../src/contracts/procurement-contract';
import {
  operatorDecisionSignal,
  redemptionStateQuery,
  redemptionWorkflowId,
} from '../../src/contracts/redemptions-contract';
import { topupStateQuery, topupWorkflowId } from '../../src/contracts/topups-contract';
import { decideRedemption } from '../../src/services/redemptions/redemptions';
import {
  paymentNoticesUnverified,
  supportActionsUnverified,
  unencryptedPayloadsRefused,
} from '../../src/metrics/registry';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import { PAYMENT_ENV, payThroughPage, reseller, waitForOrderStatus } from '../helpers/payments';
import { adminApi, fulfillmentIs, orderUntil } from '../helpers/procurement';
import { buyCode, redemptionReaches } from '../helpers/redemption';

// Money moves only on facts (ARCHITECTURE.md, "Messages are hints; facts move money"): anyone who
// reaches Temporal can signal a workflow. A forged `paymentNotified` signal, sent with the real
// `temporal` CLI (plaintext) or with a client holding the service's key (as a copied, encrypted
// payload would be), credits no top-up and pays no intent order; a forged `refund` update with no
// support request on record refunds nothing, and a forged operator decision ends no redemption.
// Each is counted. A real payment, refund or decision afterwards still acts exactly once.
const root = resolve(__dirname, '..', '..');
const run = promisify(execFile);
const TOKEN = 'admin-token-for-forged-message-tests';
let h: Harness;
let temporalBinary: string;

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    PAYMENT_WINDOW_SECONDS: '120',
    ADMIN_TOKEN: TOKEN,
    PROCUREMENT_RETRY_BASE_SECONDS: '1',
    PROCUREMENT_RETRY_CAP_SECONDS: '1',
    PROCUREMENT_DEADLINE_SECONDS: '2',
  });
  temporalBinary = (await run(process.execPath, [join(root, 'scripts', 'ensure-temporal.mjs')])).stdout.trim();
});
afterAll(() => h?.stop());

/** The attacker's tool: the real `temporal` CLI, no codec, straight at the cluster. */
async function temporalCli(...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await run(temporalBinary, [
      ...args,
      '--address',
      h.config.TEMPORAL_ADDRESS!,
      '--namespace',
      h.config.TEMPORAL_NAMESPACE,
    ]);
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stderr: e.stderr ?? '' };
  }
}

const total = async (
  counter: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> },
  labels: Record<string, string> = {},
) =>
  (await counter.get()).values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((s, v) => s + v.value, 0);

type Subject = 'topup' | 'intent order';
type Forgery = 'plaintext, with the temporal CLI' | 'encrypted, with the service key';

/** An unpaid hosted-checkout subject: its workflow id, order id and checkout URL. */
async function unpaid(
  subject: Subject,
  api: Awaited<ReturnType<typeof reseller>>['api'],
  accountId: string,
  key: string,
) {
  if (subject === 'topup') {
    const res = await api.post('/topup', { externalTopupId: key, amount: '25.00' });
    expect(res.body).toMatchObject({ status: 'pending' });
    return {
      workflowId: topupWorkflowId(accountId, key),
      orderId: res.body.orderId as string,
      checkoutUrl: res.body.checkoutUrl as string,
    };
  }
  const res = await api.post('/orders', {
    externalOrderId: key,
    productId: 'prod_chatgpt_plus_1m',
    qty: 1,
    payment: 'intent',
  });
  expect(res.body).toMatchObject({ status: 'pending', codes: [] });
  return {
    workflowId: orderWorkflowId(accountId, key),
    orderId: res.body.orderId as string,
    checkoutUrl: res.body.checkoutUrl as string,
  };
}

/** What the subject's workflow says after it handled every message sent so far (a query runs after them). */
async function workflowStatus(subject: Subject, workflowId: string): Promise<string> {
  const handle = h.services.temporal.client.workflow.getHandle(workflowId);
  return subject === 'topup'
    ? (await handle.query(topupStateQuery)).status
    : (await handle.query(orderStateQuery)).status;
}

describe('a forged paymentNotified signal moves no money (ARCHITECTURE.md: facts move money)', () => {
  const cases: [Subject, Forgery][] = [
    ['topup', 'plaintext, with the temporal CLI'],
    ['topup', 'encrypted, with the service key'],
    ['intent order', 'plaintext, with the temporal CLI'],
    ['intent order', 'encrypted, with the service key'],
  ];

  test.each(cases)(
    '%s, %s: nothing credited or delivered, counted once; a real payment then settles once',
    async (subject, forgery) => {
      const { api, accountId } = await reseller(h, '0');
      const key = `forged-${subject === 'topup' ? 't' : 'o'}-${forgery.startsWith('plain') ? 'p' : 'e'}`;
      const { workflowId, orderId, checkoutUrl } = await unpaid(subject, api, accountId, key);
      const kind = subject === 'topup' ? 'topup' : 'order';
      const refusedBefore = await total(unencryptedPayloadsRefused);
      const unverifiedBefore = await total(paymentNoticesUnverified, { kind });

      const notice = { orderId, status: 'paid' as const };
      if (forgery.startsWith('plain')) {
        const sent = await temporalCli(
          'workflow',
          'signal',
          '--workflow-id',
          workflowId,
          '--name',
          'paymentNotified',
          '--input',
          JSON.stringify(notice),
        );
        expect(sent).toEqual({ code: 0, stderr: '' });
        // The worker's codec refused the payload: the workflow never saw the signal.
        await eventually(async () =>
          (await total(unencryptedPayloadsRefused)) === refusedBefore + 1 ? true : undefined,
        );
        expect(await total(paymentNoticesUnverified, { kind })).toBe(unverifiedBefore);
      } else {
        await h.services.temporal.client.workflow.getHandle(workflowId).signal(paymentNotifiedSignal, notice);
        // The workflow asked Postgres to settle; Postgres shows no payment.
        await eventually(async () =>
          (await total(paymentNoticesUnverified, { kind, path: 'callback' })) === unverifiedBefore + 1
            ? true
            : undefined,
        );
        expect(await total(unencryptedPayloadsRefused)).toBe(refusedBefore);
      }
      expect(await workflowStatus(subject, workflowId)).toBe('pending');
      const detail = (await api.get(`/orders/${orderId}`)).body;
      expect(detail).toMatchObject({ status: 'pending', codes: [] });
      const l = await expectLedgerMatchesBalance(h, accountId);
      expect([l.balance, l.spending, l.rows]).toEqual(['0.00', '0.00', []]);

      // The payer really pays: settled once, by the payment's own confirmation.
      await payThroughPage(checkoutUrl);
      const paid = await waitForOrderStatus(api, orderId, 'delivered');
      const after = await expectLedgerMatchesBalance(h, accountId);
      if (subject === 'topup') {
        expect([after.balance, after.rows]).toEqual([
          '25.00',
          [{ type: 'topup', amount: '25.00', balance_after: '25.00', order_id: orderId }],
        ]);
      } else {
        expect(paid.codes).toHaveLength(1);
        expect([after.balance, after.spending, after.rows]).toEqual(['0.00', '18.00', []]);
      }
      expect(await total(paymentNoticesUnverified, { kind })).toBe(
        unverifiedBefore + (forgery.startsWith('plain') ? 0 : 1),
      );
    },
  );

  test('a workflow started by someone else with a plaintext input fails at once and touches nothing', async () => {
    const { accountId } = await reseller(h, '0');
    const workflowId = topupWorkflowId(accountId, 'started-by-cli');
    const refusedBefore = await total(unencryptedPayloadsRefused);
    const input = {
      accountId,
      key: 'started-by-cli',
      timing: { syncSeconds: 1, lateWatchSeconds: 1, latePollSeconds: 1 },
    };
    const started = await temporalCli(
      'workflow',
      'start',
      '--type',
      'topupWorkflow',
      '--task-queue',
      h.config.TEMPORAL_TASK_QUEUE,
      '--workflow-id',
      workflowId,
      '--input',
      JSON.stringify(input),
    );
    expect(started.code).toBe(0);
    const outcome = h.services.temporal.client.workflow.getHandle(workflowId).result();
    await expect(outcome).rejects.toBeInstanceOf(WorkflowFailedError);
    await expect(outcome).rejects.toMatchObject({ cause: { type: 'unencrypted_message' } });
    expect(await total(unencryptedPayloadsRefused)).toBeGreaterThan(refusedBefore);
    expect((await ledgerOf(h, accountId)).rows).toEqual([]);
  });
});

describe('a forged refund update moves no money: support actions act on a support request on record', () => {
  test('with no support request it is refused and counted, in plaintext or encrypted; the real refund then credits once', async () => {
    const { api, accountId } = await reseller(h, '200.00');
    sandboxSupplierControl.script('prod_apple_gift_card_us_50', { steps: [], then: 0 });
    const placed = await api.post('/orders', {
      externalOrderId: 'forged-refund',
      productId: 'prod_apple_gift_card_us_50',
      qty: 2,
    });
    expect(placed.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing' });
    const orderId = placed.body.orderId as string;
    await orderUntil(api, orderId, fulfillmentIs('needs_attention'));
    const before = await expectLedgerMatchesBalance(h, accountId);
    const unverifiedBefore = await total(supportActionsUnverified, { action: 'refund' });
    const refusedBefore = await total(unencryptedPayloadsRefused);
    const handle = h.services.temporal.client.workflow.getHandle(procurementWorkflowId(orderId));

    // Encrypted, well-formed, with a made-up request id or none: the activity finds no request on record.
    for (const forged of [
      { actor: 'mallory', reason: 'refund please' },
      { actor: 'mallory', reason: 'refund please', requestId: 'sreq_made_up' },
    ]) {
      const sent = handle.executeUpdate(refundUpdate, { args: [forged] });
      await expect(sent).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
      await expect(sent).rejects.toMatchObject({ cause: { type: 'invalid_input' } });
    }
    expect(await total(supportActionsUnverified, { action: 'refund' })).toBe(unverifiedBefore + 2);
    // Plaintext from the CLI: refused by the worker before any handler runs.
    const cli = await temporalCli(
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      procurementWorkflowId(orderId),
      '--name',
      'refund',
      '--input',
      JSON.stringify({ actor: 'mallory', reason: 'x' }),
    );
    expect(cli.code).not.toBe(0);
    expect(await total(unencryptedPayloadsRefused)).toBeGreaterThan(refusedBefore);

    expect((await api.get(`/orders/${orderId}`)).body).toMatchObject({
      status: 'paid',
      fulfillmentStatus: 'needs_attention',
    });
    expect((await expectLedgerMatchesBalance(h, accountId)).rows).toEqual(before.rows);

    // Support refunds for real: the request is written first, then the workflow acts on it, once.
    const refunded = await adminApi(h, TOKEN).post(`/orders/${orderId}/refund`, {
      actor: 'alice',
      reason: 'supplier out of stock',
    });
    expect(refunded.status).toBe(200);
    expect(refunded.body).toMatchObject({
      action: 'refund',
      order: { status: 'refunded' },
      refund: { units: 2, amount: '97.60' },
    });
    const after = await expectLedgerMatchesBalance(h, accountId);
    expect(after.rows).toEqual([
      ...before.rows,
      { type: 'refund', amount: '97.60', balance_after: '200.00', order_id: orderId },
    ]);
    expect(after.balance).toBe('200.00');
    const requests = await h.services.orm.em
      .fork()
      .execute<{ action: string; actor: string; applied: boolean }[]>(
        'select action, actor, applied_at is not null as applied from support_requests where subject_id = ?',
        [orderId],
      );
    expect(requests).toEqual([{ action: 'refund', actor: 'alice', applied: true }]);
  });
});

describe('a forged operator decision ends no redemption: it is recorded only against a request on record', () => {
  test('a fulfil signal the service never sent is refused and counted; the real decision then fulfils the attempt', async () => {
    const { api } = await reseller(h, '200.00');
    const { code } = await buyCode(api, 'prod_telegram_premium_3m');
    const submitted = await api.post('/redemptions', { code, redeemInfo: { telegram_username: '@forged_case' } });
    const id = submitted.body.redemptionId as string;
    await redemptionReaches(api, id, 'processing');
    const handle = h.services.temporal.client.workflow.getHandle(redemptionWorkflowId(id, 1));
    await eventually(async () => (await handle.query(redemptionStateQuery)).phase === 'waiting');
    const before = await total(supportActionsUnverified, { action: 'redemption.fulfill' });

    await handle.signal(operatorDecisionSignal, { decision: 'fulfill', reason: 'trust me', actor: 'mallory' });
    await eventually(async () =>
      (await total(supportActionsUnverified, { action: 'redemption.fulfill' })) === before + 1 ? true : undefined,
    );
    expect((await handle.query(redemptionStateQuery)).phase).toBe('waiting');
    expect((await api.get(`/redemptions/${id}`)).body).toMatchObject({ status: 'processing' });

    await decideRedemption({ em: h.services.orm.em.fork(), temporal: h.services.temporal }, id, {
      decision: 'fulfill',
      reason: 'applied by hand',
      actor: 'alice',
    });
    const view = await redemptionReaches(api, id, 'fulfilled');
    expect(view.deliverable).toContain('applied by hand');
    expect(await total(supportActionsUnverified, { action: 'redemption.fulfill' })).toBe(before + 1);
  });
});
