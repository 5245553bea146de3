import fc from 'fast-check';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { anyJson, fuzzParams, FUZZ_RUNS, hostileString, jsonObject, notAnObject } from './arbitraries';
import { checkAnswer, send, startFuzzTarget, stateOf, workflowProblems, type FuzzTarget, type Sent } from './harness';

// Issue 11 item 7: every MCP tool (spec 4.7) fuzzed through `/mcp` over real HTTP, with the
// arguments generated as in the REST fuzz, and now and then a broken JSON-RPC envelope. For each
// call: no 5xx; a tool error is the spec's error body with requestId equal to X-Request-Id; a
// protocol error is a JSON-RPC error; anything refused changes no money, order or code.
let t: FuzzTarget;

beforeAll(async () => {
  t = await startFuzzTarget();
}, 120_000);

const tally = new Map<string, Map<string, number>>();
afterAll(async () => {
  const lines = [...tally].map(
    ([name, counts]) =>
      `${name.padEnd(20)} ${[...counts]
        .sort()
        .map(([s, c]) => `${s}:${c}`)
        .join(' ')}`,
  );
  if (lines.length)
    process.stdout.write(`\nMCP fuzz, outcomes by tool (${FUZZ_RUNS} cases per tool):\n${lines.join('\n')}\n`);
  await t?.h.stop();
});

const externalId = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
const limit = fc.integer({ min: 1, max: 100 });
const cursor = fc.constantFrom('eyJwIjoxLCJ0IjoxfQ.AAAAAAAAAAAAAAAAAAAAAA', 'a.b');

function tools(): [string, fc.Arbitrary<string>][] {
  const { orderIds, productIds } = t.known;
  return [
    ['list_products', jsonObject({ x: hostileString }, ['x'])],
    [
      'check_availability',
      jsonObject({ productId: fc.constantFrom(...productIds), qty: fc.integer({ min: 1, max: 5 }) }, ['qty']),
    ],
    ['get_balance', jsonObject({ x: hostileString }, ['x'])],
    [
      'create_topup',
      jsonObject(
        {
          externalTopupId: externalId,
          amount: fc.integer({ min: 1, max: 100000 }).map((c) => (c / 100).toFixed(2)),
          currency: fc.constantFrom('USDT', 'USDC'),
        },
        ['currency'],
      ),
    ],
    [
      'purchase_codes',
      jsonObject(
        {
          externalOrderId: externalId,
          productId: fc.constantFrom(...productIds),
          qty: fc.integer({ min: 1, max: 3 }),
          payment: fc.constantFrom('balance', 'intent'),
          expectedUnitPrice: fc.constantFrom('18.00', '17.64', '0.01'),
        },
        ['payment', 'expectedUnitPrice'],
      ),
    ],
    ['get_order', jsonObject({ orderId: fc.constantFrom(...orderIds) })],
    ['list_orders', jsonObject({ externalOrderId: externalId, limit, cursor }, ['externalOrderId', 'limit', 'cursor'])],
    [
      'list_transactions',
      jsonObject({ type: fc.constantFrom('topup', 'purchase', 'refund', 'adjust'), limit, cursor }, [
        'type',
        'limit',
        'cursor',
      ]),
    ],
  ];
}

/** A tools/call envelope around the arguments, or (rarely) a broken envelope. */
const envelope = (name: string, args: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    {
      weight: 9,
      arbitrary: args.map(
        (a) =>
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${a}}}`,
      ),
    },
    {
      weight: 1,
      arbitrary: fc.oneof(
        notAnObject,
        anyJson.map(
          (a) =>
            `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${JSON.stringify(a) ?? 'null'}}}`,
        ),
        hostileString.map((m) => `{"jsonrpc":"2.0","id":${JSON.stringify(m)},"method":${JSON.stringify(m)}}`),
      ),
    },
  );

type Outcome = 'ok' | 'tool_error' | 'rpc_error' | 'http_error';

/** What the answer is, or why it breaks the contract. */
function classify(res: Sent): { outcome: Outcome; code?: string } | { problem: string } {
  if (res.status >= 500) return { problem: `server error ${res.status}: ${res.text.slice(0, 300)}` };
  let body: any;
  try {
    body = JSON.parse(res.text);
  } catch {
    return { problem: `non-JSON answer ${res.status}: ${res.text.slice(0, 200)}` };
  }
  if (res.status !== 200) {
    if (typeof body?.error === 'string') {
      const problem = checkAnswer(res);
      return problem ? { problem } : { outcome: 'http_error', code: body.error };
    }
    return body?.jsonrpc === '2.0' && body.error
      ? { outcome: 'rpc_error' }
      : { problem: `unexpected ${res.status} body: ${res.text.slice(0, 200)}` };
  }
  if (body?.error) return { outcome: 'rpc_error' };
  const result = body?.result;
  if (!result) return { problem: `200 without result: ${res.text.slice(0, 200)}` };
  if (!result.isError)
    return result.structuredContent ? { outcome: 'ok' } : { problem: 'tool result without structuredContent' };
  const text = result.content?.[0]?.text;
  let err: any;
  try {
    err = JSON.parse(text);
  } catch {
    return { problem: `tool error that is not the spec body: ${String(text).slice(0, 200)}` };
  }
  if (typeof err.error !== 'string' || typeof err.retryable !== 'boolean' || typeof err.message !== 'string')
    return { problem: `tool error body incomplete: ${text}` };
  if (err.requestId !== res.requestIdHeader)
    return { problem: `tool error requestId ${err.requestId} differs from X-Request-Id ${res.requestIdHeader}` };
  return { outcome: 'tool_error', code: err.error };
}

async function call(name: string, raw: string): Promise<void> {
  const before = await stateOf(t.h);
  const res = await send(`${t.h.baseUrl}/mcp`, {
    method: 'POST',
    key: `Bearer ${t.key}`,
    contentType: 'application/json',
    raw,
    headers: { accept: 'application/json, text/event-stream' },
  });
  const seen = classify(res);
  if ('problem' in seen) throw new Error(`${name}: ${seen.problem}`);
  const counts = tally.get(name) ?? new Map<string, number>();
  const key = seen.code ? `${seen.outcome}(${seen.code})` : seen.outcome;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  tally.set(name, counts);
  if (seen.outcome !== 'ok' && (await stateOf(t.h)) !== before)
    throw new Error(`${name}: ${key} but the state changed`);
}

const NAMES = [
  'list_products',
  'check_availability',
  'get_balance',
  'create_topup',
  'purchase_codes',
  'get_order',
  'list_orders',
  'list_transactions',
];

test('every MCP tool of the spec is fuzzed here', () => {
  expect(tools().map(([name]) => name)).toEqual(NAMES);
});

test.each(NAMES)(
  `${FUZZ_RUNS} generated calls of %s: no 5xx, spec error bodies, refusals change nothing`,
  async (name) => {
    const args = tools().find(([n]) => n === name)![1];
    await fc.assert(
      fc.asyncProperty(envelope(name, args), (raw) => call(name, raw)),
      fuzzParams(),
    );
    expect(tally.get(name)?.get('ok') ?? 0).toBeGreaterThan(0);
  },
  600_000,
);

test('after the run the service still answers, the money adds up and no workflow is failing or retrying', async () => {
  const health = await send(`${t.h.baseUrl}/healthz`, { method: 'GET' });
  expect(JSON.parse(health.text)).toMatchObject({ ok: true, status: 'ok' });
  await expectLedgerMatchesBalance(t.h, t.accountId);
  await eventually(async () => (await workflowProblems(t)).length === 0 || undefined, 30_000, 1000).catch(async () => {
    throw new Error(`workflows in trouble:\n${(await workflowProblems(t)).join('\n')}`);
  });
}, 120_000);
