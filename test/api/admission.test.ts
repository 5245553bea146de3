import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as PgClient } from 'pg';
import { WorkflowNotFoundError } from '@temporalio/client';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { admissionInFlight } from '../../src/metrics/registry';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually, type ApiResponse } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// Issue 39, admission control: a placement over this API process's limit, or over its account's
// share of it while another account places, is answered at once with the spec's 503
// (`retryable: true`, Retry-After) before anything is read or written; retried later with the same
// externalOrderId it is placed once. Placements are held in flight by a row lock on a
// stock-bounded product, which every placement of it takes in the worker: no timing is involved.
// The limit is fixed (initial = max, and a latency target no placement here reaches).
const LIMIT = 8;
const HELD = 'prod_chatgpt_team_1m';
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    ADMISSION_INITIAL_LIMIT: String(LIMIT),
    ADMISSION_MAX_LIMIT: String(LIMIT),
    ADMISSION_ACCOUNT_SHARE: '0.5',
    ADMISSION_LATENCY_TARGET_MS: '600000',
  });
});
afterAll(() => h?.stop());

const order = (externalOrderId: string) => ({ externalOrderId, productId: HELD, qty: 1 });

/** Runs `fn` while a transaction holds the product row every placement of HELD locks. */
async function whileProductLocked<T>(fn: () => Promise<T>): Promise<T> {
  const pg = new PgClient({ connectionString: h.databaseUrl });
  await pg.connect();
  try {
    await pg.query('begin');
    await pg.query('select id from products where id = $1 for update', [HELD]);
    try {
      return await fn();
    } finally {
      await pg.query('rollback');
    }
  } finally {
    await pg.end();
  }
}

const inFlight = async () => (await admissionInFlight.get()).values[0]?.value ?? 0;

async function expectNoWorkflow(accountId: string, externalOrderId: string) {
  await expect(
    h.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, externalOrderId)).describe(),
  ).rejects.toBeInstanceOf(WorkflowNotFoundError);
}

async function expectNoOrder(accountId: string, externalOrderId: string) {
  const rows = await h.services.orm.em
    .fork()
    .execute('select id from orders where account_id = ? and external_order_id = ?', [accountId, externalOrderId]);
  expect(rows).toEqual([]);
}

/** One MCP tool call with this key: its error body, or its result. */
async function mcpCall(
  key: string,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; body: any }> {
  const mcp = new McpClient({ name: 'admission-test', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  try {
    const res = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
    return { isError: res.isError ?? false, body: JSON.parse((res.content[0] as { text: string }).text) };
  } finally {
    await mcp.close();
  }
}

/** Two funded accounts and their clients. */
async function heavyAndLight() {
  const [heavy, light] = [await h.account('1000.00'), await h.account('1000.00')];
  return { heavy, light, heavyApi: client(h.apiUrl, heavy.apiKey), lightApi: client(h.apiUrl, light.apiKey) };
}

/**
 * While the product is locked: the light account puts one order in flight and the heavy account its
 * share (`${prefix}-<i>`), then the heavy account asks for one more (`overId`); `andThen` runs
 * before the placements held in flight are let go.
 */
async function heavyOverShare<T>(
  heavyApi: ReturnType<typeof client>,
  lightApi: ReturnType<typeof client>,
  prefix: string,
  overId: string,
  andThen: () => Promise<T>,
) {
  const share = LIMIT / 2;
  return whileProductLocked(async () => {
    const lightFirst = lightApi.post('/orders', order('light-1'));
    await eventually(async () => (await inFlight()) === 1, 30_000, 50, 'the light account in flight');
    const heavyHeld = Array.from({ length: share }, (_, i) => heavyApi.post('/orders', order(`${prefix}-${i}`)));
    await eventually(async () => (await inFlight()) === share + 1, 30_000, 50, 'the heavy account at its share');
    const shed = await heavyApi.post('/orders', order(overId));
    return { held: [lightFirst, ...heavyHeld], shed, after: await andThen() };
  });
}

function expectShed(res: ApiResponse, reason: string) {
  expect({
    status: res.status,
    error: res.body.error,
    retryable: res.body.retryable,
    reason: res.body.details?.reason,
  }).toEqual({
    status: 503,
    error: 'service_unavailable',
    retryable: true,
    reason,
  });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
}

test('an account alone may use the whole limit', async () => {
  const { accountId, apiKey } = await h.account('1000.00');
  const api = client(h.apiUrl, apiKey);
  const answers = await whileProductLocked(async () => {
    const held = Array.from({ length: LIMIT }, (_, i) => api.post('/orders', order(`alone-${i}`)));
    await eventually(async () => (await inFlight()) === LIMIT, 30_000, 50, 'the whole limit in flight');
    return held;
  });
  expect((await Promise.all(answers)).map((r) => r.status)).toEqual(Array(LIMIT).fill(200));
  expect((await expectLedgerMatchesBalance(h, accountId)).rows).toHaveLength(1 + LIMIT);
});

test('over the limit: 503 retryable at once, nothing charged, no order, no workflow; retried, it is placed once', async () => {
  // The limit is taken by four accounts (two each, under their share), then a fifth asks.
  const holders = await Promise.all(Array.from({ length: LIMIT / 2 }, () => h.account('1000.00')));
  const { accountId, apiKey } = await h.account('1000.00');
  const api = client(h.apiUrl, apiKey);
  const before = await expectLedgerMatchesBalance(h, accountId);
  const { held, shed, viaMcp } = await whileProductLocked(async () => {
    const held = holders.flatMap((a, i) =>
      [0, 1].map((j) => client(h.apiUrl, a.apiKey).post('/orders', order(`held-${i}-${j}`))),
    );
    await eventually(async () => (await inFlight()) === LIMIT, 30_000, 50, 'the limit in flight');
    const shed = await api.post('/orders', order('over-limit'));
    // Every kind of placement, on every surface, meets the same limit.
    const topup = await api.post('/topup', { externalTopupId: 'over-limit-topup', amount: '10.00' });
    const viaMcp = await mcpCall(apiKey, 'purchase_codes', {
      externalOrderId: 'over-limit-mcp',
      productId: HELD,
      qty: 1,
    });
    return { held, shed: [shed, topup], viaMcp };
  });
  for (const answer of shed) expectShed(answer, 'limit');
  expect(viaMcp).toEqual({
    isError: true,
    body: expect.objectContaining({
      error: 'service_unavailable',
      retryable: true,
      details: expect.objectContaining({ reason: 'limit' }),
    }),
  });
  expect((await Promise.all(held)).map((r) => r.status)).toEqual(Array(LIMIT).fill(200));

  // The shed requests left nothing behind: no order, no workflow, the balance and ledger as they were.
  for (const id of ['over-limit', 'over-limit-topup', 'over-limit-mcp']) await expectNoOrder(accountId, id);
  await expectNoWorkflow(accountId, 'over-limit');
  await expectNoWorkflow(accountId, 'over-limit-mcp');
  const after = await expectLedgerMatchesBalance(h, accountId);
  expect([after.balance, after.rows]).toEqual([before.balance, before.rows]);

  // The client's retry (same externalOrderId) is placed; the retry after that is a replay.
  const retried = await api.post('/orders', order('over-limit'));
  expect(retried.body).toMatchObject({ status: 'delivered', reused: false });
  const again = await api.post('/orders', order('over-limit'));
  expect(again.body).toEqual({ ...retried.body, reused: true });
  const final = await expectLedgerMatchesBalance(h, accountId);
  expect(final.rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);
  expect(final.rows[1].order_id).toBe(retried.body.orderId);
});

test('a key this process has seen is refused over its share before it is read, with its budget as last counted and nothing counted; retried, placed once', async () => {
  const { heavy, heavyApi, lightApi } = await heavyAndLight();
  const share = LIMIT / 2;
  // The process learns which account a key is, and its budget, at the key's statement.
  expect((await heavyApi.post('/orders', order('known-0'))).status).toBe(200);
  const heavyBefore = await expectLedgerMatchesBalance(h, heavy.accountId);
  const { held, shed } = await heavyOverShare(heavyApi, lightApi, 'known-held', 'known-over', async () => undefined);
  expectShed(shed, 'account_share');
  const answered = await Promise.all(held);
  expect(answered.map((r) => r.status)).toEqual(Array(share + 1).fill(200));
  // Answered before the key's statement, with the key's budget as its last counted request left it
  // (spec section 8: every response carries it); the refusal itself was not counted.
  const budget = (r: ApiResponse) => ({
    limit: Number(r.headers.get('x-ratelimit-limit')),
    remaining: Number(r.headers.get('x-ratelimit-remaining')),
    reset: Number(r.headers.get('x-ratelimit-reset')),
  });
  const shedBudget = budget(shed);
  const counted = answered
    .slice(1)
    .map(budget)
    .filter((b) => b.reset === shedBudget.reset);
  expect(shedBudget.limit).toBe(budget(answered[1]).limit);
  expect(shedBudget.reset).toBeGreaterThanOrEqual(budget(answered[1]).reset);
  expect(shedBudget.remaining).toBe(
    counted.length > 0 ? Math.min(...counted.map((b) => b.remaining)) : shedBudget.limit,
  );
  await expectNoOrder(heavy.accountId, 'known-over');
  await expectNoWorkflow(heavy.accountId, 'known-over');
  expect((await expectLedgerMatchesBalance(h, heavy.accountId)).rows).toHaveLength(heavyBefore.rows.length + share);

  const retried = await heavyApi.post('/orders', order('known-over'));
  expect(retried.body).toMatchObject({ status: 'delivered', reused: false });
  expect(Number(retried.headers.get('x-ratelimit-remaining'))).toBeGreaterThan(0);
  // The retry is the first request counted after the last one the refusal showed.
  if (budget(retried).reset === shedBudget.reset) expect(budget(retried).remaining).toBe(shedBudget.remaining - 1);
  expect((await heavyApi.post('/orders', order('known-over'))).body).toEqual({ ...retried.body, reused: true });
  expect((await expectLedgerMatchesBalance(h, heavy.accountId)).rows).toHaveLength(heavyBefore.rows.length + share + 1);
});

test('one account over its share while another places: it is refused, the other is let through', async () => {
  const { heavy, light, heavyApi, lightApi } = await heavyAndLight();
  const share = LIMIT / 2;
  const heavyBefore = await expectLedgerMatchesBalance(h, heavy.accountId);
  const {
    held,
    shed,
    after: { lightSecond },
  } = await heavyOverShare(heavyApi, lightApi, 'heavy', 'heavy-over', async () => {
    // Room is left under the limit, and the light account is under its share.
    const lightSecond = lightApi.post('/orders', order('light-2'));
    await eventually(async () => (await inFlight()) === share + 2, 30_000, 50, 'the light account let through');
    return { lightSecond };
  });
  expectShed(shed, 'account_share');
  expect((await Promise.all([...held, lightSecond])).map((r) => r.status)).toEqual(Array(share + 2).fill(200));
  await expectNoOrder(heavy.accountId, 'heavy-over');
  await expectNoWorkflow(heavy.accountId, 'heavy-over');
  const heavyAfter = await expectLedgerMatchesBalance(h, heavy.accountId);
  expect(heavyAfter.rows).toHaveLength(heavyBefore.rows.length + share);
  expect((await expectLedgerMatchesBalance(h, light.accountId)).rows.map((r) => r.type)).toEqual([
    'adjust',
    'purchase',
    'purchase',
  ]);
});
