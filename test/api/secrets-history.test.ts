import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { demoCatalog, seedCatalog } from '../../src/db/seed';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { ENCRYPTED_ENCODING } from '../../src/temporal/codec';
import { sandboxUpstreamOf, startHarness, type Harness } from '../helpers/harness';
import {
  decodeHistory,
  encodingOf,
  historyAsText,
  payloadsOf,
  rawHistory,
  searchAttributePayloadsOf,
} from '../helpers/history';
import { eventually } from '../helpers/http';
import { checkoutIdOf, PAYMENT_ENV, payThroughPage, waitForOrderStatus } from '../helpers/payments';
import { adminApi, fulfillmentIs, orderUntil, reseller, type Api } from '../helpers/procurement';
import { buyCode, redemptionReaches } from '../helpers/redemption';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// Issue 12 "done when": every workflow type runs on one harness (balance order, intent order paid
// at the checkout, top-up paid, direct-code procurement with a manual delivery by support, a
// redemption with a password field, webhook deliveries), then every history on the harness's task
// queue is read twice. Raw, through a client without the codec (what the Temporal database, its
// backups or an unauthenticated Web UI hold): no secret in the bytes and every payload
// `binary/encrypted`, search attributes excepted. Decoded with the service's keys (what an
// operator reads through the codec server): it decodes, and still holds no secret, because
// workflows carry ids and counts (item 2: the codec is the second line, not the only one).
const ADMIN_TOKEN = `admin-${randomBytes(12).toString('hex')}`;
const CODEC_TOKEN = `codec-${randomBytes(12).toString('hex')}`;
const CUSTOM_SEARCH_ATTRIBUTES = ['AccountId', 'ExternalOrderId', 'OrderStatus', 'FulfillmentStatus'];
const LOCAL_ACTIVITY_MARKER_FIELDS = [
  'activity_id',
  'activity_type',
  'attempt',
  'backoff',
  'complete_time',
  'original_schedule_time',
  'seq',
];
const WORKFLOW_TYPES = [
  'orderWorkflow',
  'topupWorkflow',
  'procurementWorkflow',
  'redemptionWorkflow',
  'webhookDeliveryWorkflow',
];

let h: Harness;
const sandboxRedemptionUpstream = sandboxUpstreamOf(() => h);
let receiver: Receiver;
let plain: Client;
let plainConnection: Connection;

/** Secrets by kind; each must be absent from every history. */
const secrets: Record<string, string[]> = {
  'platform code': [],
  'gift card code': [],
  'checkout URL': [],
  'checkout id': [],
  'redeem detail': [],
  email: [],
  'API key': [],
  'webhook secret': [],
};
/** Non-secret ids that a decoded history must show (the codec really decodes). */
const visibleIds = new Map<string, string>(); // workflowId prefix -> id expected in its decoded history
const add = (kind: string, ...values: string[]) => {
  for (const v of values) {
    expect(typeof v === 'string' && v.length >= 8).toBe(true); // a short value would match by chance
    secrets[kind].push(v);
  }
};

/** Support's reason for the manual delivery: no secret, so it is plain in the decoded history alone. */
const SUPPORT_REASON = `bought at the retail desk ${randomBytes(4).toString('hex')}`;
let manualOrderId: string;

interface Execution {
  workflowId: string;
  runId: string;
  type: string;
}
let executions: Execution[] = [];

async function executionsOnQueue(): Promise<Execution[]> {
  const found: Execution[] = [];
  for await (const wf of plain.workflow.list({ query: `TaskQueue = "${h.config.TEMPORAL_TASK_QUEUE}"` })) {
    found.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type });
  }
  return found;
}

/** Every flow of the service once; what the caller sees is collected as secrets. */
async function runEveryFlow() {
  const { api, apiKey, accountId } = await reseller(h, '500.00');
  add('API key', apiKey);

  // Webhook deliveries: every event of this account goes to a receiver; the first attempt fails.
  receiver = await startReceiver();
  receiver.script([500]);
  const put = await api.put('/webhook', { url: receiver.url });
  expect(put.status).toBe(200);
  add('webhook secret', put.body.secret);
  expect((await api.post('/webhook/test', {})).status).toBe(200);

  // Balance order: platform codes at once.
  const balance = await api.post('/orders', {
    externalOrderId: 'sh-balance',
    productId: 'prod_chatgpt_plus_1m',
    qty: 2,
  });
  expect(balance.body).toMatchObject({ status: 'delivered' });
  add('platform code', ...balance.body.codes);
  visibleIds.set(`order:${accountId}:sh-balance`, balance.body.orderId);

  // Intent order paid at the hosted checkout.
  const intent = await api.post('/orders', {
    externalOrderId: 'sh-intent',
    productId: 'prod_chatgpt_plus_1m',
    qty: 1,
    payment: 'intent',
  });
  expect(intent.body).toMatchObject({ status: 'pending', checkoutUrl: expect.stringMatching(/\/checkout\/chk_/) });
  add('checkout URL', intent.body.checkoutUrl);
  add('checkout id', checkoutIdOf(intent.body.checkoutUrl));
  await payThroughPage(intent.body.checkoutUrl);
  add('platform code', ...(await waitForOrderStatus(api, intent.body.orderId, 'delivered')).codes);
  visibleIds.set(`order:${accountId}:sh-intent`, intent.body.orderId);

  // Intent order of a gift card: paid, then procured by its child workflow.
  const intentGift = await api.post('/orders', {
    externalOrderId: 'sh-intent-gift',
    productId: 'prod_robux_800',
    qty: 1,
    payment: 'intent',
  });
  add('checkout URL', intentGift.body.checkoutUrl);
  add('checkout id', checkoutIdOf(intentGift.body.checkoutUrl));
  await payThroughPage(intentGift.body.checkoutUrl);
  add('gift card code', ...(await waitForOrderStatus(api, intentGift.body.orderId, 'delivered')).codes);
  visibleIds.set(`order:${accountId}:sh-intent-gift`, intentGift.body.orderId);
  visibleIds.set(`procure:${intentGift.body.orderId}`, intentGift.body.orderId);

  // Top-up paid at the hosted checkout.
  const topup = await api.post('/topup', { externalTopupId: 'sh-topup', amount: '20.00' });
  expect(topup.body).toMatchObject({ status: 'pending' });
  add('checkout URL', topup.body.checkoutUrl);
  add('checkout id', checkoutIdOf(topup.body.checkoutUrl));
  await payThroughPage(topup.body.checkoutUrl);
  await waitForOrderStatus(api, topup.body.orderId, 'delivered');
  visibleIds.set(`topup:${accountId}:`, topup.body.orderId);

  // Direct-code balance order procured in full by the supplier.
  const gift = await api.post('/orders', {
    externalOrderId: 'sh-gift',
    productId: 'prod_apple_gift_card_us_10',
    qty: 2,
  });
  expect(gift.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing' });
  add('gift card code', ...(await waitForOrderStatus(api, gift.body.orderId, 'delivered')).codes);
  visibleIds.set(`order:${accountId}:sh-gift`, gift.body.orderId);
  visibleIds.set(`procure:${gift.body.orderId}`, gift.body.orderId);

  // Direct-code order that gets stuck (one unit of two), delivered by hand by support.
  await manualDelivery(api, accountId);

  // Redemption with a password field; the upstream echoes both fields in its completion note.
  await redemptionWithPassword(api, accountId);

  // Every event's delivery reaches the receiver (the test event's first attempt fails, then succeeds).
  const [{ events }] = await h.services.orm.em
    .fork()
    .execute<{ events: number }[]>('select count(*)::int as events from events where account_id = ?', [accountId]);
  expect(events).toBeGreaterThanOrEqual(10); // test, 6 × order.delivered, delivery_attention, topup.credited, redemption.fulfilled
  const deliveries = await eventually(
    async () => {
      const list = (await api.get('/webhook/deliveries?limit=100')).body.deliveries as { id: string; status: string }[];
      return list.length === events && list.every((d) => d.status === 'succeeded') ? list : undefined;
    },
    90_000,
    250,
  );
  expect(receiver.received.some((r) => r.reply === 500)).toBe(true);
  for (const d of deliveries) visibleIds.set(`delivery:${d.id}`, d.id);
}

async function manualDelivery(api: Api, accountId: string) {
  sandboxSupplierControl.script('prod_roblox_gift_card_us_50', { steps: [1], then: 0 });
  const placed = await api.post('/orders', {
    externalOrderId: 'sh-manual',
    productId: 'prod_roblox_gift_card_us_50',
    qty: 2,
  });
  const orderId = placed.body.orderId as string;
  await orderUntil(api, orderId, fulfillmentIs('needs_attention'), { timeoutMs: 60_000 });
  const byHand = `HAND-${randomBytes(4).toString('hex').toUpperCase()}`;
  const delivered = await adminApi(h, ADMIN_TOKEN).post(`/orders/${orderId}/deliver`, {
    actor: 'carol',
    reason: SUPPORT_REASON,
    codes: [byHand],
  });
  expect(delivered.status).toBe(200);
  const codes = (await waitForOrderStatus(api, orderId, 'delivered')).codes as string[];
  expect(codes).toHaveLength(2);
  expect(codes).toContain(byHand);
  add('gift card code', ...codes);
  manualOrderId = orderId;
  visibleIds.set(`order:${accountId}:sh-manual`, orderId);
  visibleIds.set(`procure:${orderId}`, orderId);
}

async function redemptionWithPassword(api: Api, accountId: string) {
  const base = demoCatalog.find((p) => p.id === 'prod_chatgpt_team_1m')!;
  await seedCatalog(h.services.orm.em.fork(), [
    {
      ...base,
      id: 'prod_sh_pw_redeem',
      slug: 'sh-pw-redeem',
      stockMode: 'on_demand',
      limitedRemaining: null,
      redeemFieldsEn: [],
      redeemFields: [
        { key: 'email', label: 'Email', type: 'email', required: true },
        { key: 'password', label: 'Password', type: 'password', required: true },
      ],
    },
  ]);
  const { code, orderId, externalOrderId } = await buyCode(api, 'prod_sh_pw_redeem');
  visibleIds.set(`order:${accountId}:${externalOrderId}`, orderId);
  const email = `sh-${randomBytes(4).toString('hex')}@example.com`;
  const password = `Pw-${randomBytes(6).toString('hex')}!`;
  add('platform code', code);
  add('redeem detail', email, password);
  add('email', email);
  sandboxRedemptionUpstream.script('prod_sh_pw_redeem', {
    deliverable: `Signed in as {target} with password ${password} and activated.`,
  });
  const submitted = await api.post('/redemptions', { code, redeemInfo: { email, password } });
  expect(submitted.status).toBe(200);
  await redemptionReaches(api, submitted.body.redemptionId, 'fulfilled', 60_000);
  visibleIds.set(`redemption:${submitted.body.redemptionId}:`, submitted.body.redemptionId);
}

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    PAYMENT_WINDOW_SECONDS: '120',
    ADMIN_TOKEN,
    CODEC_TOKEN,
    RATE_LIMIT_PER_MINUTE: '100000',
    REDEMPTION_REFRESH_SECONDS: '1',
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    WEBHOOK_RETRY_BASE_SECONDS: '1',
    WEBHOOK_RETRY_CAP_SECONDS: '2',
    WEBHOOK_TIMEOUT_MS: '3000',
    PROCUREMENT_RETRY_BASE_SECONDS: '1',
    PROCUREMENT_RETRY_CAP_SECONDS: '1',
    PROCUREMENT_MAX_ROUNDS: '50',
    PROCUREMENT_DEADLINE_SECONDS: '3',
  });
  // A client with the default data converter: it reads exactly what the server stores.
  plainConnection = await Connection.connect({ address: h.config.TEMPORAL_ADDRESS! });
  plain = new Client({ connection: plainConnection, namespace: h.config.TEMPORAL_NAMESPACE });

  await runEveryFlow();
  // Visibility is eventually consistent: wait until every workflow the flows started is listed.
  executions = await eventually(
    async () => {
      const found = await executionsOnQueue();
      const ids = found.map((e) => e.workflowId);
      return [...visibleIds.keys()].every((prefix) => ids.some((id) => id.startsWith(prefix))) ? found : undefined;
    },
    60_000,
    500,
  );
}, 300_000);

afterAll(async () => {
  sandboxSupplierControl.reset();
  sandboxRedemptionUpstream.reset();
  await receiver?.close();
  await plainConnection?.close();
  await h?.stop();
});

/** Where each secret turns up in `text` (kind and a masked value), for a readable failure. */
function secretsIn(text: string | Buffer): string[] {
  const hits: string[] = [];
  for (const [kind, values] of Object.entries(secrets)) {
    for (const v of values) if (text.indexOf(v) !== -1) hits.push(`${kind} ${v.slice(0, 6)}…`);
  }
  return hits;
}

test('the flows ran every workflow type, and their secrets were collected', () => {
  expect([...new Set(executions.map((e) => e.type))].sort()).toEqual([...WORKFLOW_TYPES].sort());
  for (const [kind, values] of Object.entries(secrets)) expect([kind, values.length > 0]).toEqual([kind, true]);
  // Two order workflows, one top-up, three procurements, one redemption, six deliveries at least.
  expect(executions.length).toBeGreaterThanOrEqual(13);
});

test('raw histories (no codec): 0 secrets in the bytes or the JSON, and every payload but search attributes is binary/encrypted', async () => {
  let payloadCount = 0;
  for (const e of executions) {
    const history = await rawHistory(plain, e.workflowId, e.runId);
    const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    const where = `${e.type} ${e.workflowId}`;
    expect([where, secretsIn(bytes)]).toEqual([where, []]);
    expect([where, secretsIn(JSON.stringify(history))]).toEqual([where, []]);
    expect([where, secretsIn(historyAsText(history))]).toEqual([where, []]);

    // A local activity's marker keeps the core's own bookkeeping (sequence, attempt, activity type,
    // times) as a plain `data` detail the SDK never hands to the codec; its result is encrypted.
    const bookkeeping = new Set(
      history.events!.flatMap((ev) => ev.markerRecordedEventAttributes?.details?.data?.payloads ?? []),
    );
    for (const p of bookkeeping)
      expect(Object.keys(JSON.parse(Buffer.from(p.data!).toString('utf8'))).sort()).toEqual(
        LOCAL_ACTIVITY_MARKER_FIELDS,
      );

    // A version marker (`patched`) records its patch id as a plain detail, made by the core too.
    const versionMarkers = new Set(
      history
        .events!.filter((ev) => ev.markerRecordedEventAttributes?.markerName === 'core_patch')
        .flatMap((ev) =>
          Object.values(ev.markerRecordedEventAttributes!.details ?? {}).flatMap((d) => d.payloads ?? []),
        ),
    );
    for (const p of versionMarkers)
      expect(
        Object.keys(JSON.parse(Buffer.from(p.data!).toString('utf8'))).every((k) => ['id', 'deprecated'].includes(k)),
      ).toBe(true);

    const payloads = payloadsOf(history, { except: ['searchAttributes'] }).filter(
      (p) => !bookkeeping.has(p as never) && !versionMarkers.has(p as never),
    );
    expect([where, payloads.length > 0]).toEqual([where, true]);
    const plainPayloads = payloads.filter((p) => encodingOf(p) !== ENCRYPTED_ENCODING).map(encodingOf);
    expect([where, plainPayloads]).toEqual([where, []]);
    payloadCount += payloads.length;

    // Search attributes stay plain (the UI filters on them); they are ids and statuses only.
    for (const [name, values] of searchAttributePayloadsOf(history)) {
      expect([where, name, CUSTOM_SEARCH_ATTRIBUTES.includes(name) || /^(Temporal|BuildIds)/.test(name)]).toEqual([
        where,
        name,
        true,
      ]);
      for (const p of values) expect(encodingOf(p)).not.toBe(ENCRYPTED_ENCODING);
    }
  }
  expect(payloadCount).toBeGreaterThan(executions.length * 2);
}, 120_000);

test('the same histories decode with TEMPORAL_PAYLOAD_KEYS, show their ids, and still hold no secret (the codec is the second line)', async () => {
  for (const e of executions) {
    const where = `${e.type} ${e.workflowId}`;
    const history = await decodeHistory(await rawHistory(plain, e.workflowId, e.runId), h.config.TEMPORAL_PAYLOAD_KEYS);
    const payloads = payloadsOf(history);
    expect([where, payloads.filter((p) => encodingOf(p) === ENCRYPTED_ENCODING).length]).toEqual([where, 0]);
    expect([where, payloads.some((p) => encodingOf(p) === 'json/plain')]).toEqual([where, true]);
    const text = historyAsText(history);
    const id = [...visibleIds]
      .filter(([prefix]) => e.workflowId.startsWith(prefix))
      .sort(([a], [b]) => b.length - a.length)[0]?.[1];
    expect([where, !!id && text.includes(id)]).toEqual([where, true]);
    expect([where, secretsIn(text)]).toEqual([where, []]);
  }
}, 120_000);

test("a new order's codes and a new checkout link travel in the placement's answer only sealed to the API process", async () => {
  const answered = executions.filter((e) => /^(order:.*:sh-(balance|intent)|topup:.*:sh-topup)$/.test(e.workflowId));
  expect(answered.map((e) => e.workflowId.replace(/:.*:/, ':')).sort()).toEqual([
    'order:sh-balance',
    'order:sh-intent',
    'topup:sh-topup',
  ]);
  for (const e of answered) {
    const text = historyAsText(
      await decodeHistory(await rawHistory(plain, e.workflowId, e.runId), h.config.TEMPORAL_PAYLOAD_KEYS),
    );
    expect([e.workflowId, /\\?"sealed\\?":\\?"[A-Za-z0-9_-]{80,}/.test(text)]).toEqual([e.workflowId, true]);
  }
});

test("control: a non-secret update argument (support's reason) is found by the same search in the decoded history only", async () => {
  const procure = executions.filter((e) => e.workflowId === `procure:${manualOrderId}`);
  expect(procure.length).toBeGreaterThanOrEqual(1);
  for (const e of procure) {
    const raw = await rawHistory(plain, e.workflowId, e.runId);
    expect(Buffer.from(temporal.api.history.v1.History.encode(raw).finish()).indexOf(SUPPORT_REASON)).toBe(-1);
    expect(historyAsText(raw)).not.toContain(SUPPORT_REASON);
  }
  const decoded = await Promise.all(
    procure.map(async (e) =>
      historyAsText(
        await decodeHistory(await rawHistory(plain, e.workflowId, e.runId), h.config.TEMPORAL_PAYLOAD_KEYS),
      ),
    ),
  );
  expect(decoded.join('\n')).toContain(SUPPORT_REASON);
});
