import { batchWorkflowId } from '../../src/contracts/batches-contract';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { decodedHistoryText } from '../helpers/history';
import { expectLedgerMatchesBalance, ledgerOf } from '../helpers/money';
import { startReceiver, verifySignature, type Receiver } from '../helpers/webhook-receiver';

// Batches (issue 40 item 4), over real HTTP on real Postgres and Temporal: a batch is accepted at
// once and its workflow places the lines in order, each exactly as POST /orders would (the same
// lines sent one by one by a twin account get the same outcomes, balances and ledgers); the same
// externalBatchId is the same batch; lines and codes are the owner's only; `batch.completed` ends
// it. Chunks of 3 lines, so a batch of 40 continues as new (10 chunks per run).
let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({ BATCH_CHUNK_LINES: '3', WEBHOOK_ALLOW_INSECURE_URLS: 'true' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

async function reseller(balance: string) {
  const a = await h.account(balance);
  return { ...a, api: client(h.apiUrl, a.apiKey) };
}
type Reseller = Awaited<ReturnType<typeof reseller>>;
type Line = { externalOrderId: string; productId: string; qty: number; expectedUnitPrice?: string };

async function completed(r: Reseller, batchId: string) {
  return eventually(
    async () => {
      const res = await r.api.get(`/batches/${batchId}`);
      return res.body.status === 'completed' ? res.body : undefined;
    },
    60_000,
    200,
    `batch ${batchId} completed`,
  );
}

async function linesOf(r: Reseller, batchId: string): Promise<any[]> {
  const lines: any[] = [];
  for (let cursor: string | null = null; ;) {
    const res: { body: any } = await r.api.get(
      `/batches/${batchId}/lines?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    lines.push(...res.body.lines);
    if (!res.body.hasMore) return lines;
    cursor = res.body.nextCursor;
  }
}

/** An outcome as both paths can show it: the order by its externalOrderId (ids differ between accounts), or the refusal. */
async function settledOrder(r: Reseller, orderId: string) {
  // A gift card's procurement runs on its own after the placement: compared once it ended.
  return eventually(
    async () => {
      const o = (await r.api.get(`/orders/${orderId}`)).body;
      return o.status !== 'paid' ? o : undefined;
    },
    30_000,
    200,
    `order ${orderId} past paid`,
  );
}
type Outcome = {
  outcome: 'placed' | 'rejected';
  reused?: boolean;
  order?: string;
  status?: string;
  amount?: string;
  codes?: number;
  error?: string;
  details?: unknown;
};
const placedAs = (o: any, reused: boolean): Outcome => ({
  outcome: 'placed',
  reused,
  order: o.external_order_id,
  status: o.status,
  amount: o.amount,
  codes: o.codes.length,
});
const rejectedAs = (error: string, details: unknown): Outcome => ({ outcome: 'rejected', error, details });

const pre = { externalOrderId: 'pre-1', productId: 'prod_chatgpt_plus_1m', qty: 1 };
const LINES: Line[] = [
  { externalOrderId: 'b-1', productId: 'prod_chatgpt_plus_1m', qty: 1 },
  { externalOrderId: 'b-2', productId: 'prod_chatgpt_plus_1m', qty: 2, expectedUnitPrice: '18.00' },
  { externalOrderId: 'b-1', productId: 'prod_chatgpt_plus_1m', qty: 1 },
  { externalOrderId: 'b-1', productId: 'prod_chatgpt_plus_1m', qty: 2 },
  pre,
  { externalOrderId: 'b-3', productId: 'prod_chatgpt_plus_1m', qty: 1, expectedUnitPrice: '17.00' },
  { externalOrderId: 'b-4', productId: 'prod_chatgpt_plus_1m', qty: 2 },
  { externalOrderId: 'b-5', productId: 'prod_unknown', qty: 1 },
  { externalOrderId: 'b-6', productId: 'prod_api_order_test', qty: 2 },
  { externalOrderId: 'b-7', productId: 'prod_api_order_test', qty: 1 },
  { externalOrderId: 'b-8', productId: 'prod_robux_400', qty: 1 },
  { externalOrderId: 'b-9', productId: 'prod_chatgpt_plus_1m', qty: 1 },
  { externalOrderId: 'b-10', productId: 'prod_chatgpt_plus_1m', qty: 1 },
  { externalOrderId: 'b-4', productId: 'prod_chatgpt_plus_1m', qty: 2 },
  { externalOrderId: 'b-11', productId: 'prod_spotify_premium_1m', qty: 1 },
  { externalOrderId: 'b-12', productId: 'prod_chatgpt_team_1m', qty: 1 },
  { externalOrderId: 'b-13', productId: 'prod_api_order_test', qty: 1 },
];

test('each line gets what the same order sent alone, after the lines before it, gets: replays, conflicts, price locks, the balance running out, gift cards', async () => {
  const [batched, single] = [await reseller('100.00'), await reseller('100.00')];
  for (const r of [batched, single]) expect((await r.api.post('/orders', pre)).status).toBe(200);

  const accepted = await batched.api.post('/batches', { externalBatchId: 'eq-1', lines: LINES });
  expect(accepted.status).toBe(200);
  expect(accepted.body).toMatchObject({
    batchId: expect.stringMatching(/^bat_/),
    externalBatchId: 'eq-1',
    total: LINES.length,
    reused: false,
  });
  expect(['running', 'completed']).toContain(accepted.body.status);
  const done = await completed(batched, accepted.body.batchId);

  const viaBatch: Outcome[] = [];
  for (const l of await linesOf(batched, accepted.body.batchId)) {
    viaBatch.push(
      l.status === 'placed'
        ? placedAs(await settledOrder(batched, l.orderId), l.reused)
        : rejectedAs(l.rejection.error, l.rejection.details),
    );
  }
  const viaSingles: Outcome[] = [];
  for (const line of LINES) {
    const res = await single.api.post('/orders', line);
    viaSingles.push(
      res.status === 200
        ? placedAs(await settledOrder(single, res.body.orderId), res.body.reused)
        : rejectedAs(res.body.error, res.body.details),
    );
  }
  expect(viaBatch).toEqual(viaSingles);
  // What this pins down, spelled out.
  expect(viaBatch.map((o) => (o.outcome === 'placed' ? (o.reused ? 'reused' : o.status) : o.error))).toEqual([
    'delivered',
    'delivered',
    'reused',
    'idempotency_conflict',
    'reused',
    'price_changed',
    'insufficient_balance',
    'not_found',
    'api_test_quantity',
    'delivered',
    'delivered',
    'delivered',
    'insufficient_balance',
    'insufficient_balance',
    'out_of_stock',
    'insufficient_balance',
    'delivered',
  ]);
  expect(done).toMatchObject({ total: LINES.length, pending: 0, placed: 8, rejected: 9 });

  const [a, b] = [
    await expectLedgerMatchesBalance(h, batched.accountId),
    await expectLedgerMatchesBalance(h, single.accountId),
  ];
  expect(a.balance).toBe('4.78');
  const shape = (l: Awaited<ReturnType<typeof ledgerOf>>) => l.rows.map((r) => [r.type, r.amount, r.balance_after]);
  expect(shape(a)).toEqual(shape(b));
  expect((await batched.api.get('/balance')).body.balance).toBe((await single.api.get('/balance')).body.balance);
});

test('a placed line shows its order as GET /orders/{id} does, codes included, to its owner only; others get 404', async () => {
  const owner = await reseller('50.00');
  const res = await owner.api.post('/batches', {
    externalBatchId: 'codes-1',
    lines: [{ externalOrderId: 'c-1', productId: 'prod_chatgpt_plus_1m', qty: 2 }],
  });
  await completed(owner, res.body.batchId);
  const [line] = await linesOf(owner, res.body.batchId);
  const order = (await owner.api.get(`/orders/${line.orderId}`)).body;
  expect(line).toEqual({
    line: 1,
    externalOrderId: 'c-1',
    productId: 'prod_chatgpt_plus_1m',
    qty: 2,
    expectedUnitPrice: null,
    status: 'placed',
    orderId: order.id,
    reused: false,
    order: {
      status: 'delivered',
      amount: '36.00',
      deliveryType: 'redemption',
      fulfillmentStatus: null,
      fulfilledQuantity: 2,
      codes: order.codes,
      redeemUrl: order.redeemUrl,
    },
    rejection: null,
  });
  expect(order.codes).toHaveLength(2);
  const stranger = await reseller('0');
  expect((await stranger.api.get(`/batches/${res.body.batchId}`)).status).toBe(404);
  expect((await stranger.api.get(`/batches/${res.body.batchId}/lines`)).status).toBe(404);
});

test('the same externalBatchId with the same lines is the same batch; with other lines an idempotency_conflict that changes nothing', async () => {
  const r = await reseller('50.00');
  const lines = [{ externalOrderId: 's-1', productId: 'prod_api_order_test', qty: 1 }];
  const first = await r.api.post('/batches', { externalBatchId: 'same-1', lines });
  await completed(r, first.body.batchId);
  const again = await r.api.post('/batches', { externalBatchId: 'same-1', lines });
  expect(again.body).toMatchObject({ batchId: first.body.batchId, status: 'completed', placed: 1, reused: true });
  const other = await r.api.post('/batches', {
    externalBatchId: 'same-1',
    lines: [...lines, { externalOrderId: 's-2', productId: 'prod_api_order_test', qty: 1 }],
  });
  expect(other.status).toBe(409);
  expect(other.body).toMatchObject({
    error: 'idempotency_conflict',
    details: { batchId: first.body.batchId, total: 1 },
  });
  expect((await ledgerOf(h, r.accountId)).balance).toBe('49.99');
});

test('batch.completed reaches the webhook, signed, with the counts', async () => {
  const r = await reseller('1.00');
  const { secret } = (await r.api.put('/webhook', { url: receiver.url })).body;
  const res = await r.api.post('/batches', {
    externalBatchId: 'hook-1',
    lines: [
      { externalOrderId: 'h-1', productId: 'prod_api_order_test', qty: 1 },
      { externalOrderId: 'h-2', productId: 'prod_chatgpt_plus_1m', qty: 1 },
    ],
  });
  const [got] = await receiver.waitFor(1, (all) =>
    all.filter((x) => x.body?.event === 'batch.completed' && x.body.batchId === res.body.batchId),
  );
  expect(verifySignature(secret, got.raw, got.headers['x-wholesale-signature'])).toBe(true);
  expect(got.body).toEqual({
    eventId: expect.stringMatching(/^evt_/),
    event: 'batch.completed',
    timestamp: expect.any(Number),
    batchId: res.body.batchId,
    externalBatchId: 'hook-1',
    total: 2,
    placed: 1,
    rejected: 1,
  });
});

test('a batch longer than one run continues as new; no run of its history holds a code', async () => {
  const r = await reseller('10.00');
  const lines = Array.from({ length: 40 }, (_, i) => ({
    externalOrderId: `can-${i}`,
    productId: 'prod_api_order_test',
    qty: 1,
  }));
  const res = await r.api.post('/batches', { externalBatchId: 'long-1', lines });
  expect((await completed(r, res.body.batchId)).placed).toBe(40);
  const codes = (await linesOf(r, res.body.batchId)).flatMap((l) => l.order.codes);
  expect(codes).toHaveLength(40);
  const { client: temporal } = h.services.temporal;
  const runs: string[] = [];
  for await (const wf of temporal.workflow.list({ query: `WorkflowId = "${batchWorkflowId(res.body.batchId)}"` }))
    runs.push(wf.runId);
  expect(runs.length).toBeGreaterThan(1);
  const text = (
    await Promise.all(
      runs.map((runId) =>
        decodedHistoryText(temporal, process.env.TEMPORAL_PAYLOAD_KEYS!, batchWorkflowId(res.body.batchId), runId),
      ),
    )
  ).join('\n');
  for (const code of codes) expect(text).not.toContain(code);
  await expectLedgerMatchesBalance(h, r.accountId);
});

test.each([
  ['no lines', { externalBatchId: 'bad-1', lines: [] }],
  [
    'more than 5,000 lines',
    {
      externalBatchId: 'bad-2',
      lines: Array.from({ length: 5001 }, (_, i) => ({
        externalOrderId: `x-${i}`,
        productId: 'prod_api_order_test',
        qty: 1,
      })),
    },
  ],
  [
    'a line with qty 0',
    {
      externalBatchId: 'bad-3',
      lines: [
        { externalOrderId: 'y-1', productId: 'prod_api_order_test', qty: 1 },
        { externalOrderId: 'y-2', productId: 'prod_api_order_test', qty: 0 },
      ],
    },
  ],
  [
    'a line with intent payment',
    {
      externalBatchId: 'bad-4',
      lines: [{ externalOrderId: 'z-1', productId: 'prod_api_order_test', qty: 1, payment: 'intent' }],
    },
  ],
  ['no externalBatchId', { lines: [{ externalOrderId: 'w-1', productId: 'prod_api_order_test', qty: 1 }] }],
])('%s: 400 invalid_input, and no batch', async (_name, body) => {
  const r = await reseller('5.00');
  const res = await r.api.post('/batches', body);
  expect(res.status).toBe(400);
  expect(res.body.error).toBe('invalid_input');
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute<{ n: string }[]>('select count(*) as n from batches where account_id = ?', [r.accountId]);
  expect(Number(n)).toBe(0);
});
