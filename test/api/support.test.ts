import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { payCheckout } from '../../src/providers/sandbox/sandbox-payments';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { FulfillmentStatusKey } from '../../src/contracts/search-attributes';
import { auditRows } from '../helpers/console';
import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV } from '../helpers/payments';
import {
  adminApi,
  eventsOfOrder,
  fulfillmentIs,
  historyText,
  orderUntil,
  procurementState,
  reseller,
  storedCodes,
  supplierPurchases,
  supportActionsOf,
  temporalCli,
  wholesale,
  workflowIds,
  type Api,
} from '../helpers/procurement';

// Issue 6: support resolves needs_attention orders (spec 3.2) through the admin API and
// `npx wholesale support ...`, ops find them in Temporal, and every action records who and why.
// Here the bound is time: 3 s per attempt, rounds 1 s apart.
let h: Harness;
const TOKEN = 'admin-token-for-support-tests';

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    ADMIN_TOKEN: TOKEN,
    RATE_LIMIT_PER_MINUTE: '100000',
    PROCUREMENT_RETRY_BASE_SECONDS: '1',
    PROCUREMENT_RETRY_CAP_SECONDS: '1',
    PROCUREMENT_MAX_ROUNDS: '50',
    PROCUREMENT_DEADLINE_SECONDS: '3',
  });
});
afterAll(() => h?.stop());
beforeEach(() => sandboxSupplierControl.reset());

const admin = () => adminApi(h, TOKEN);
const attentionEvents = async (orderId: string) =>
  (await eventsOfOrder(h, orderId)).filter((e) => e.type === 'order.delivery_attention');

/** A balance order whose supplier hands over `obtained` units, then nothing: it ends in needs_attention. */
async function stuckOrder(api: Api, productId: string, qty: number, obtained: number, externalOrderId: string) {
  sandboxSupplierControl.script(productId, { steps: obtained > 0 ? [obtained] : [], then: 0 });
  const placed = await api.post('/orders', { externalOrderId, productId, qty });
  expect(placed.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing' });
  const stuck = await orderUntil(api, placed.body.orderId, fulfillmentIs('needs_attention'));
  expect(stuck).toMatchObject({
    fulfilledQuantity: obtained,
    codes: [],
    errorCode: 'delivery_needs_attention',
    resolution: 'manual_review',
  });
  return placed.body.orderId as string;
}

describe('resume (spec 3.2: support retries the remaining delivery)', () => {
  test('after the time bound; a resume that fails again emits no second event; a resume with the supplier back delivers', async () => {
    const { api, accountId } = await reseller(h, '200.00');
    const orderId = await stuckOrder(api, 'prod_apple_gift_card_us_50', 3, 1, 'resume-1');
    const first = await procurementState(h, orderId);
    expect(first.roundsSinceResume).toBeLessThan(50); // the 3 s deadline, not the round bound
    expect(await attentionEvents(orderId)).toHaveLength(1);

    const resumed = await admin().post(`/orders/${orderId}/resume`, {
      actor: 'alice',
      reason: 'supplier says stock is back',
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({
      action: 'resume',
      refund: null,
      order: {
        orderId,
        status: 'paid',
        fulfillmentStatus: 'processing',
        errorCode: null,
        resolution: null,
        fulfilledQuantity: 1,
        remaining: 2,
      },
    });
    expect((await api.get(`/orders/${orderId}`)).body).toMatchObject({
      fulfillmentStatus: 'processing',
      errorCode: null,
      codes: [],
    });
    await orderUntil(api, orderId, fulfillmentIs('needs_attention'));
    expect(await attentionEvents(orderId)).toHaveLength(1);

    sandboxSupplierControl.script('prod_apple_gift_card_us_50', { then: 'all' });
    expect((await admin().post(`/orders/${orderId}/resume`, { actor: 'bob', reason: 'second try' })).status).toBe(200);
    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered');
    expect(delivered).toMatchObject({
      fulfillmentStatus: 'delivered',
      fulfilledQuantity: 3,
      errorCode: null,
      resolution: null,
    });
    expect(delivered.codes).toHaveLength(3);
    expect((await eventsOfOrder(h, orderId)).map((e) => e.type)).toEqual([
      'order.delivery_attention',
      'order.delivered',
    ]);

    expect(await supportActionsOf(h, orderId)).toEqual([
      {
        action: 'resume',
        actor: 'alice',
        reason: 'supplier says stock is back',
        payload: { qty: 3, fulfilledQuantity: 1 },
      },
      { action: 'resume', actor: 'bob', reason: 'second try', payload: { qty: 3, fulfilledQuantity: 1 } },
    ]);
    const detail = await admin().get(`/orders/${orderId}`);
    expect(detail.body).toMatchObject({
      status: 'delivered',
      actions: [{ actor: 'alice' }, { actor: 'bob' }],
      workflow: { phase: 'delivered' },
    });
    expect(detail.body.workflow.supportActions.map((a: any) => a.actor)).toEqual(['alice', 'bob']);
    expect(JSON.stringify(detail.body)).not.toContain(delivered.codes[0]);
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.map((r) => [r.type, r.amount])).toEqual([
      ['adjust', '200.00'],
      ['purchase', '-146.40'],
    ]);
  });
});

describe('manual deliver (codes obtained by hand for the missing units)', () => {
  test('is validated, then delivers the order with every code and order.delivered', async () => {
    const { api, accountId } = await reseller(h, '200.00');
    const orderId = await stuckOrder(api, 'prod_roblox_gift_card_us_50', 3, 1, 'manual-1');
    const [obtained] = (await storedCodes(h, orderId)).map((c) => c.code);
    const deliver = (body: unknown) => admin().post(`/orders/${orderId}/deliver`, body);
    const who = { actor: 'carol', reason: 'bought two cards at the retail desk' };

    const cases: [string, unknown, Record<string, unknown>][] = [
      ['too few codes', { ...who, codes: ['HAND-0001'] }, { details: { missing: 2, given: 1 } }],
      ['the same code twice', { ...who, codes: ['HAND-0001', 'HAND-0001'] }, {}],
      ['a code already issued', { ...who, codes: [obtained, 'HAND-0002'] }, { details: { alreadyIssued: 1 } }],
      ['no reason', { actor: 'carol', codes: ['HAND-0001', 'HAND-0002'] }, {}],
      ['an empty actor', { ...who, actor: ' ', codes: ['HAND-0001', 'HAND-0002'] }, {}],
    ];
    for (const [name, body, extra] of cases) {
      const res = await deliver(body);
      expect([name, res.status, res.body]).toEqual([
        name,
        400,
        expect.objectContaining({ error: 'invalid_input', requestId: expect.any(String), ...extra }),
      ]);
    }
    expect((await api.get(`/orders/${orderId}`)).body).toMatchObject({
      fulfillmentStatus: 'needs_attention',
      codes: [],
      fulfilledQuantity: 1,
    });

    const ok = await deliver({ ...who, codes: [' HAND-0001 ', 'HAND-0002'] });
    expect(ok.status).toBe(200);
    expect(ok.body.order).toMatchObject({
      status: 'delivered',
      fulfillmentStatus: 'delivered',
      fulfilledQuantity: 3,
      remaining: 0,
    });
    const delivered = (await api.get(`/orders/${orderId}`)).body;
    expect(delivered).toMatchObject({
      status: 'delivered',
      fulfillmentStatus: 'delivered',
      errorCode: null,
      resolution: null,
    });
    expect(delivered.codes).toEqual([obtained, 'HAND-0001', 'HAND-0002']);
    const events = await eventsOfOrder(h, orderId);
    expect(events.map((e) => e.type)).toEqual(['order.delivery_attention', 'order.delivered']);
    expect(events[1].payload).toMatchObject({
      orderId,
      codes: delivered.codes,
      deliveryType: 'direct_code',
      redeemUrl: null,
    });
    expect(await supportActionsOf(h, orderId)).toEqual([
      { action: 'deliver', ...who, payload: { units: 2, obtainedFromSupplier: 1 } },
    ]);

    // The codes reached the workflow as a staged batch id: none of them is in its history.
    const history = await historyText(h, procurementWorkflowId(orderId));
    expect(history).toContain('bought two cards at the retail desk'); // payloads are decoded: the reason is there
    for (const code of delivered.codes) expect(history).not.toContain(code);
    expect(await h.services.orm.em.fork().execute('select id from support_code_batches')).toEqual([]);

    const again = await deliver({ ...who, codes: ['HAND-0003'] });
    expect([again.status, again.body.error]).toEqual([400, 'invalid_input']);
    await expectLedgerMatchesBalance(h, accountId);
  });
});

describe('refund of the undelivered part (never a full automatic refund once codes were obtained)', () => {
  test('balance order: a refund ledger row for the missing units only, the balance right, the obtained codes released', async () => {
    const { api, accountId } = await reseller(h, '300.00');
    const orderId = await stuckOrder(api, 'prod_apple_gift_card_us_100', 3, 1, 'refund-1');
    expect((await ledgerOf(h, accountId)).rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);

    const res = await admin().post(`/orders/${orderId}/refund`, {
      actor: 'dave',
      reason: 'supplier out of stock for a week',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      action: 'refund',
      refund: { units: 2, amount: '194.00' },
      order: {
        status: 'refunded',
        fulfillmentStatus: 'refunded',
        fulfilledQuantity: 1,
        errorCode: null,
        resolution: null,
      },
    });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.map((r) => [r.type, r.amount, r.balance_after, r.order_id])).toEqual([
      ['adjust', '300.00', '300.00', null],
      ['purchase', '-291.00', '9.00', orderId],
      ['refund', '194.00', '203.00', orderId],
    ]);
    expect(l.spending).toBe('97.00');
    const tx = (await api.get('/transactions?type=refund')).body.transactions;
    expect(tx).toEqual([
      expect.objectContaining({ type: 'refund', amount: '194.00', balanceAfter: '203.00', order_id: orderId }),
    ]);

    const order = (await api.get(`/orders/${orderId}`)).body;
    expect(order).toMatchObject({
      status: 'refunded',
      fulfillmentStatus: 'refunded',
      fulfilledQuantity: 1,
      errorCode: null,
      resolution: null,
    });
    expect(order.codes).toEqual((await storedCodes(h, orderId)).map((c) => c.code));
    expect(order.codes).toHaveLength(1);
    expect(await supportActionsOf(h, orderId)).toEqual([
      {
        action: 'refund',
        actor: 'dave',
        reason: 'supplier out of stock for a week',
        payload: { refundedUnits: 2, amount: '194.00', releasedCodes: 1 },
      },
    ]);

    const twice = await admin().post(`/orders/${orderId}/refund`, { actor: 'dave', reason: 'again' });
    expect([twice.status, twice.body.error]).toEqual([400, 'invalid_input']);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('203.00');
    const handle = h.services.temporal.client.workflow.getHandle(procurementWorkflowId(orderId));
    await eventually(async () => {
      const d = await handle.describe();
      return d.status.name === 'COMPLETED' && d.typedSearchAttributes.get(FulfillmentStatusKey) === 'refunded';
    });
  });

  test('intent order with nothing obtained: `npx wholesale support refund` credits the whole amount to the balance', async () => {
    const { api, accountId } = await reseller(h, '0');
    sandboxSupplierControl.script('prod_robux_1700', { then: 0 });
    const placed = await api.post('/orders', {
      externalOrderId: 'refund-intent',
      productId: 'prod_robux_1700',
      qty: 2,
      payment: 'intent',
    });
    const paid = await payCheckout(
      h.services.orm.em.fork(),
      h.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(placed.body.checkoutUrl),
    );
    await paid!.callback;
    const orderId = placed.body.orderId;
    await orderUntil(api, orderId, fulfillmentIs('needs_attention'));
    expect((await ledgerOf(h, accountId)).spending).toBe('43.00');

    const noActor = await wholesale(h, 'support', 'refund', orderId, '--reason', 'no stock');
    expect([noActor.exitCode, noActor.json?.error]).toEqual([1, 'invalid_input']);
    const out = await wholesale(
      h,
      'support',
      'refund',
      orderId,
      '--actor',
      'erin',
      '--reason',
      'payer asked for the money back',
    );
    expect(out.exitCode).toBe(0);
    expect(out.json).toMatchObject({
      action: 'refund',
      refund: { units: 2, amount: '43.00' },
      order: { status: 'refunded', payment: 'intent' },
    });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.map((r) => [r.type, r.amount, r.balance_after])).toEqual([['refund', '43.00', '43.00']]);
    expect([l.balance, l.spending]).toEqual(['43.00', '0.00']);
    expect((await api.get(`/orders/${orderId}`)).body).toMatchObject({
      status: 'refunded',
      fulfillmentStatus: 'refunded',
      codes: [],
    });
    expect(
      (await auditRows(h, 'subject_id = ?', [orderId])).map((r) => [
        r.action,
        r.actor,
        r.account_id,
        r.reason,
        r.outcome,
      ]),
    ).toEqual([['order.refund', 'cli:erin', accountId, 'payer asked for the money back', 'ok']]);
  });
});

describe('runbook (docs/runbook.md): ops find the stuck order in Temporal, support resolves it with the CLI', () => {
  test('temporal workflow list/query, then npx wholesale support orders, show and deliver', async () => {
    const { api, accountId } = await reseller(h, '50.00');
    const orderId = await stuckOrder(api, 'prod_robux_400', 2, 1, 'runbook-1');
    const workflowId = procurementWorkflowId(orderId);

    const stuckQuery = 'FulfillmentStatus = "needs_attention"';
    const listed = await eventually(async () => {
      const rows: any[] = await temporalCli(h, 'workflow', 'list', '--query', stuckQuery);
      return rows?.some((r) => r.execution.workflowId === workflowId) ? rows : undefined;
    });
    expect(listed.every((r) => r.type.name === 'procurementWorkflow')).toBe(true);
    const mine: any[] = await temporalCli(
      h,
      'workflow',
      'list',
      '--query',
      `${stuckQuery} AND AccountId = "${accountId}"`,
    );
    expect(mine.map((r) => r.execution.workflowId)).toEqual([workflowId]);
    const queried = await temporalCli(h, 'workflow', 'query', '--workflow-id', workflowId, '--type', 'state');
    expect(queried.queryResult[0]).toMatchObject({
      phase: 'needs_attention',
      qty: 2,
      fulfilledQuantity: 1,
      remaining: 1,
      rounds: expect.any(Number),
    });

    const list = await wholesale(h, 'support', 'orders', '--status', 'needs_attention', '--account', accountId);
    expect(list.json).toEqual([
      expect.objectContaining({
        orderId,
        externalOrderId: 'runbook-1',
        remaining: 1,
        errorCode: 'delivery_needs_attention',
      }),
    ]);
    const shown = await wholesale(h, 'support', 'show', orderId);
    expect(shown.json).toMatchObject({ orderId, actions: [], workflow: { phase: 'needs_attention', remaining: 1 } });

    const file = join(mkdtempSync(join(tmpdir(), 'codes-')), 'codes.txt');
    writeFileSync(file, 'ROBUX-HAND-0001\n\n');
    const delivered = await wholesale(
      h,
      'support',
      'deliver',
      orderId,
      '--actor',
      'frank',
      '--reason',
      'bought by hand',
      '--codes-file',
      file,
    );
    expect(delivered.exitCode).toBe(0);
    expect(delivered.json.order).toMatchObject({
      status: 'delivered',
      fulfillmentStatus: 'delivered',
      fulfilledQuantity: 2,
    });
    expect((await api.get(`/orders/${orderId}`)).body.codes).toHaveLength(2);
    await eventually(async () => (await workflowIds(h, `${stuckQuery} AND AccountId = "${accountId}"`)).length === 0);
  });
});

describe('a procurement run that was terminated (docs/runbook.md "Edge cases")', () => {
  test('a support action starts procure:<orderId> again; the action is refused while it procures, and the order is delivered', async () => {
    const { api, accountId } = await reseller(h, '50.00');
    sandboxSupplierControl.script('prod_roblox_gift_card_us_10', { then: 0 });
    const placed = await api.post('/orders', {
      externalOrderId: 'terminated-1',
      productId: 'prod_roblox_gift_card_us_10',
      qty: 2,
    });
    const orderId = placed.body.orderId;
    const handle = h.services.temporal.client.workflow.getHandle(procurementWorkflowId(orderId));
    await eventually(async () => (await procurementState(h, orderId)).rounds >= 1);
    await handle.terminate('ops: testing a lost procurement');

    sandboxSupplierControl.script('prod_roblox_gift_card_us_10', { then: 'all' });
    const res = await admin().post(`/orders/${orderId}/resume`, {
      actor: 'gina',
      reason: 'procurement workflow was terminated',
    });
    expect([res.status, res.body.error, res.body.details]).toEqual([
      400,
      'invalid_input',
      { phase: 'procuring', status: 'paid', fulfillmentStatus: 'processing' },
    ]);
    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered');
    expect(delivered.codes).toHaveLength(2);
    expect((await supplierPurchases(h, orderId)).flatMap((p) => p.codes).sort()).toEqual([...delivered.codes].sort());
    expect(await supportActionsOf(h, orderId)).toEqual([]);
    expect((await expectLedgerMatchesBalance(h, accountId)).rows.filter((r) => r.type === 'purchase')).toHaveLength(1);
  });
});

describe('admin API (/admin/v1, ADMIN_TOKEN)', () => {
  test('needs the token, answers with the spec error body, lists by fulfillment status and serves its OpenAPI document', async () => {
    for (const token of [undefined, 'not-the-admin-token-at-all']) {
      const res = await adminApi(h, token).get('/orders');
      expect([res.status, res.body.error, typeof res.body.requestId]).toEqual([401, 'unauthorized', 'string']);
    }
    const { api, accountId } = await reseller(h, '50.00');
    const fine = await api.post('/orders', {
      externalOrderId: 'admin-fine',
      productId: 'prod_apple_gift_card_us_10',
      qty: 1,
    });
    await orderUntil(api, fine.body.orderId, (o) => o.status === 'delivered');
    const delivered = await admin().get(`/orders?fulfillmentStatus=delivered&accountId=${accountId}`);
    expect(delivered.body.orders.map((o: any) => o.orderId)).toEqual([fine.body.orderId]);
    expect((await admin().get(`/orders?fulfillmentStatus=needs_attention&accountId=${accountId}`)).body.orders).toEqual(
      [],
    );
    expect((await admin().get('/orders?fulfillmentStatus=stuck')).body.error).toBe('invalid_input');
    expect((await admin().post('/orders/ord_nope/resume', { actor: 'a', reason: 'b' })).body.error).toBe('not_found');
    const notStuck = await admin().post(`/orders/${fine.body.orderId}/refund`, { actor: 'a', reason: 'b' });
    expect([notStuck.status, notStuck.body.error, notStuck.body.details]).toEqual([
      400,
      'invalid_input',
      { status: 'delivered', fulfillmentStatus: 'delivered' },
    ]);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('40.15');
    const doc = await admin().get('/openapi.json');
    expect(doc.body.servers).toEqual([{ url: h.baseUrl }]);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/admin/v1/orders',
        '/admin/v1/orders/{id}',
        '/admin/v1/orders/{id}/resume',
        '/admin/v1/orders/{id}/deliver',
        '/admin/v1/orders/{id}/refund',
      ]),
    );
  });
});

describe('gift-card value picker (spec 2.1)', () => {
  test('`npx wholesale products group` and GET /products honour inStock and available, sorted by numeric denomination', async () => {
    const { api } = await reseller(h, '10.00');
    expect((await wholesale(h, 'products', 'group', 'robux')).json.map((p: any) => p.denomination)).toEqual([
      '400',
      '800',
      '1700',
    ]);
    const em = h.services.orm.em.fork();
    await em.execute(`update products set in_stock = false where id = 'prod_robux_800'`);
    await em.execute(`update products set stock_mode = 'limited', limited_remaining = 0 where id = 'prod_robux_1700'`);
    const picker = await wholesale(h, 'products', 'group', 'robux');
    expect(picker.json.map((p: any) => [p.id, p.inStock, p.available])).toEqual([['prod_robux_400', true, true]]);
    const rows = (await api.get('/products')).body.products.filter((p: any) => p.productGroupId === 'robux');
    expect(rows.map((p: any) => [p.id, p.inStock, p.available])).toEqual([
      ['prod_robux_400', true, true],
      ['prod_robux_800', false, false],
      ['prod_robux_1700', true, false],
    ]);
    expect(
      (await api.post('/orders', { externalOrderId: 'pick-800', productId: 'prod_robux_800', qty: 1 })).body.error,
    ).toBe('out_of_stock');
    expect(
      (await api.post('/orders', { externalOrderId: 'pick-1700', productId: 'prod_robux_1700', qty: 1 })).body.error,
    ).toBe('out_of_stock');
  });
});
