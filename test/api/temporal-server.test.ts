import { Client as PgClient } from 'pg';
import { CODE_RE } from '../../src/codes';
import type { TemporalServer } from '../../src/dev/temporal-server';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { AccountIdKey, ExternalOrderIdKey, OrderStatusKey } from '../../src/contracts/search-attributes';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { startTestTemporalServer, type TestTemporalServer } from '../helpers/temporal-server';

// Issue 15 item 4: the production Temporal server (SQL persistence and SQL visibility on Postgres,
// built by scripts/ensure-temporal-server.mjs), not the dev server. Its two databases live on the
// test run's Postgres (TEST_DATABASE_URL), next to the service's own database.
let unavailable: string | undefined;
let own: TestTemporalServer | undefined;
let server: TemporalServer | undefined;
let h: Harness | undefined;

function skipped(): boolean {
  if (unavailable) {
    // Only when the binaries cannot be built (no Go toolchain, no module proxy).
    console.warn(`SKIPPED: the production Temporal server is unavailable: ${unavailable}`);
    return true;
  }
  return false;
}

async function temporalDb<T extends Record<string, unknown>>(sql: string, params: unknown[]): Promise<T[]> {
  const url = new URL(process.env.TEST_DATABASE_URL!);
  url.pathname = `/${own!.prefix}`;
  const pg = new PgClient({ connectionString: url.toString() });
  await pg.connect();
  try {
    return (await pg.query(sql, params)).rows as T[];
  } finally {
    await pg.end();
  }
}

beforeAll(async () => {
  const started = await startTestTemporalServer();
  if ('unavailable' in started) {
    unavailable = started.unavailable;
    return;
  }
  own = started;
  server = started.server;
  h = await startHarness({ TEMPORAL_ADDRESS: server.address });
}, 15 * 60_000);

afterAll(async () => {
  await h?.stop();
  await own?.stop();
}, 60_000);

/** Places a balance order, retrying the same externalOrderId (idempotent) while Temporal answers retryable errors. */
async function placeOrder(api: Awaited<ReturnType<typeof reseller>>['api'], externalOrderId: string) {
  return eventually(
    async () => {
      const res = await api.post('/orders', { externalOrderId, productId: 'prod_chatgpt_plus_1m', qty: 1 });
      if (res.status >= 500) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
      return res;
    },
    60_000,
    500,
  );
}

async function expectCompletedOnServer(accountId: string, externalOrderId: string) {
  const workflowId = orderWorkflowId(accountId, externalOrderId);
  const handle = h!.services.temporal.client.workflow.getHandle(workflowId);
  await handle.result();
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  // Persisted by the SQL store in Postgres, not in a dev server's SQLite file.
  const rows = await temporalDb<{ workflow_id: string }>(
    'select workflow_id from current_executions where workflow_id = $1',
    [workflowId],
  );
  expect(rows).toHaveLength(1);
  // Custom search attributes through SQL visibility.
  const listed = await eventually(async () => {
    const found = [];
    for await (const wf of h!.services.temporal.client.workflow.list({
      query: `ExternalOrderId = "${externalOrderId}" AND AccountId = "${accountId}" AND ExecutionStatus = "Completed"`,
    }))
      found.push(wf);
    return found.length === 1 ? found : undefined;
  });
  expect(listed[0].typedSearchAttributes.get(OrderStatusKey)).toBe('delivered');
  expect(listed[0].typedSearchAttributes.get(AccountIdKey)).toBe(accountId);
  expect(listed[0].typedSearchAttributes.get(ExternalOrderIdKey)).toBe(externalOrderId);
}

describe('the production Temporal server on Postgres', () => {
  test('a balance order is delivered through it, and another after the server restarts on the same database', async () => {
    if (skipped()) return;
    const { api, accountId } = await reseller(h!, '50.00');

    const first = await placeOrder(api, 'ts-1');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ externalOrderId: 'ts-1', amount: '18.00', status: 'delivered', reused: false });
    expect(first.body.codes).toEqual([expect.stringMatching(CODE_RE)]);
    expect((await expectLedgerMatchesBalance(h!, accountId)).balance).toBe('32.00');
    await expectCompletedOnServer(accountId, 'ts-1');

    const pid = server!.pid;
    await server!.restart();
    expect(server!.pid).not.toBe(pid);

    // The first order's history survived the restart.
    const firstRun = h!.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'ts-1'));
    expect((await firstRun.describe()).status.name).toBe('COMPLETED');

    const second = await placeOrder(api, 'ts-2');
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ externalOrderId: 'ts-2', amount: '18.00', status: 'delivered' });
    expect(second.body.codes[0]).not.toBe(first.body.codes[0]);
    const l = await expectLedgerMatchesBalance(h!, accountId);
    expect(l.balance).toBe('14.00');
    expect(l.rows.filter((r: { type: string }) => r.type === 'purchase')).toHaveLength(2);
    await expectCompletedOnServer(accountId, 'ts-2');

    // The same order again is the same order (idempotent across the restart), with no second debit.
    const again = await placeOrder(api, 'ts-1');
    expect(again.body).toMatchObject({ orderId: first.body.orderId, reused: true });
    expect((await expectLedgerMatchesBalance(h!, accountId)).balance).toBe('14.00');
  }, 240_000);
});
