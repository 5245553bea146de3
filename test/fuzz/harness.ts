import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { createApiKey } from '../../src/services/accounts/accounts';
import { keyLimits } from '../../src/services/accounts/key-access';

// The service under fuzz: the real API, worker, Postgres and Temporal, with the request limits
// raised out of the way (they are tested elsewhere) and nothing left to change in the background
// (long payment windows, a supplier that refuses), so that the state before and after a refused
// request can be compared exactly.
export interface FuzzTarget {
  h: Harness;
  key: string;
  /** A key of the same account made with the read scope alone. */
  readKey: string;
  otherKey: string;
  accountId: string;
  /** Ids that exist: the fuzz account's own order, another account's order, and so on. */
  known: {
    orderIds: string[];
    codes: string[];
    redemptionIds: string[];
    deliveryIds: string[];
    productIds: string[];
    exportIds: string[];
    downloadTokens: string[];
    batchIds: string[];
  };
}

export async function startFuzzTarget(): Promise<FuzzTarget> {
  const h = await startHarness({
    RATE_LIMIT_PER_MINUTE: '100000000',
    REDEMPTION_RATE_LIMIT_PER_MINUTE: '100000000',
    TOPUP_RATE_LIMIT_PER_HOUR: '100000000',
    PAYMENT_WINDOW_SECONDS: '3600',
    LATE_PAYMENT_WATCH_SECONDS: '0',
    SANDBOX_SUPPLIER_SCRIPT: JSON.stringify({ '*': { then: 'permanent' } }),
  });
  const mine = await h.account('100000.00');
  const readKey = await createApiKey(h.services.orm.em.fork(), mine.accountId, keyLimits({ scopes: ['read'] }));
  const other = await h.account('100.00');
  const api = client(h.apiUrl, mine.apiKey);
  const otherApi = client(h.apiUrl, other.apiKey);
  const own = await api.post('/orders', { externalOrderId: 'fuzz-seed-1', productId: 'prod_chatgpt_plus_1m', qty: 1 });
  const foreign = await otherApi.post('/orders', {
    externalOrderId: 'fuzz-seed-2',
    productId: 'prod_api_order_test',
    qty: 1,
  });
  if (own.status !== 200 || foreign.status !== 200)
    throw new Error(`fuzz setup orders failed: ${own.status} ${foreign.status}`);
  // A redemption and a webhook delivery of the fuzz account, so that their paths have real ids.
  const spare = await api.post('/orders', {
    externalOrderId: 'fuzz-seed-3',
    productId: 'prod_chatgpt_plus_1m',
    qty: 1,
  });
  const redemption = await api.post('/redemptions', {
    code: spare.body.codes[0],
    redeemInfo: { session_user_id: '6f1f8c1e-8d5e-4c1a-9a57-3a8f0e6b1c2d' },
  });
  await api.put('/webhook', { url: 'https://8.8.8.8/hook' });
  const delivery = await api.post('/webhook/test', {});
  if (redemption.status !== 200 || delivery.status !== 200)
    throw new Error(`fuzz setup failed: ${redemption.status} ${delivery.status}`);
  // An export (ready, with its link) and a batch of each account.
  const range = {
    from: new Date(Date.now() - 86_400_000).toISOString(),
    to: new Date(Date.now() + 60_000).toISOString(),
  };
  const exports = await Promise.all(
    [api, otherApi].map((c) => c.post('/exports', { externalExportId: 'fuzz-export', kind: 'orders', ...range })),
  );
  const batches = await Promise.all(
    [api, otherApi].map((c) =>
      c.post('/batches', {
        externalBatchId: 'fuzz-batch',
        lines: [{ externalOrderId: 'fuzz-batch-1', productId: 'prod_api_order_test', qty: 1 }],
      }),
    ),
  );
  if ([...exports, ...batches].some((r) => r.status !== 200))
    throw new Error('fuzz setup of exports and batches failed');
  const links = await Promise.all(
    [api, otherApi].map((c, i) =>
      eventually(async () => (await c.get(`/exports/${exports[i].body.exportId}`)).body.downloadUrl, 30_000),
    ),
  );
  await Promise.all(
    [api, otherApi].map((c, i) =>
      eventually(async () => (await c.get(`/batches/${batches[i].body.batchId}`)).body.status === 'completed', 30_000),
    ),
  );
  return {
    h,
    key: mine.apiKey,
    readKey,
    otherKey: other.apiKey,
    accountId: mine.accountId,
    known: {
      orderIds: [own.body.orderId, foreign.body.orderId, 'ord_unknown'],
      codes: [...own.body.codes, ...foreign.body.codes, 'AAAA-BBBB-CCCC-DDDD'],
      redemptionIds: [redemption.body.redemptionId, 'red_unknown'],
      deliveryIds: [delivery.body.deliveryId, 'dlv_unknown'],
      productIds: [
        'prod_chatgpt_plus_1m',
        'prod_chatgpt_team_1m',
        'prod_telegram_premium_3m',
        'prod_spotify_premium_1m',
        'prod_api_order_test',
        'prod_robux_400',
        'robux',
        'prod_unknown',
      ],
      exportIds: [...exports.map((e) => e.body.exportId), 'exp_unknown'],
      downloadTokens: links.map((l: string) => new URL(l).searchParams.get('token')!),
      batchIds: [...batches.map((b) => b.body.batchId), 'bat_unknown'],
    },
  };
}

/** Everything a refused request must leave as it was: money, ledger, orders, codes, redemptions, webhooks. */
export async function stateOf(h: Harness): Promise<string> {
  const [row] = await h.services.orm.em.fork().execute<Record<string, string>[]>(`select
      (select coalesce(sum(balance), 0)::text from accounts) as balances,
      (select coalesce(sum(cumulative_spending), 0)::text from accounts) as spending,
      (select count(*) from ledger_transactions) as ledger,
      (select count(*) from orders) as orders,
      (select count(*) from issued_codes) as codes,
      (select count(*) from stock_codes where order_id is not null) as stock_sold,
      (select count(*) from redemptions) as redemptions,
      (select count(*) from redemption_attempts) as attempts,
      (select coalesce(sum(version), 0) from webhook_endpoints) as webhooks,
      (select count(*) from api_keys) as keys,
      (select count(*) from exports) as exports,
      (select count(*) from batches) as batches,
      (select count(*) from batch_lines) as batch_lines`);
  return JSON.stringify(row);
}

export interface Sent {
  status: number;
  text: string;
  requestIdHeader: string | null;
  headers: Headers;
}

export async function send(
  url: string,
  opts: { method: string; key?: string; contentType?: string; raw?: string; headers?: Record<string, string> },
): Promise<Sent> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key !== undefined) headers.authorization = opts.key;
  if (opts.contentType) headers['content-type'] = opts.contentType;
  const body = opts.raw === undefined || opts.method === 'GET' ? undefined : Buffer.from(opts.raw, 'utf8');
  const started = Date.now();
  try {
    // A Buffer body, so fetch adds no content type of its own.
    const res = await fetch(url, { method: opts.method, headers, body });
    const sent = {
      status: res.status,
      text: await res.text(),
      requestIdHeader: res.headers.get('x-request-id'),
      headers: res.headers,
    };
    lastAnswerAt = Date.now();
    return sent;
  } catch (err) {
    // A network failure is a finding too; say what was sent and how long the connection had been idle.
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `${opts.method} ${new URL(url).pathname} (${body?.length ?? 0} body bytes) failed after ${Date.now() - started} ms, ` +
        `${lastAnswerAt ? started - lastAnswerAt : '?'} ms after the previous answer: ${cause?.code ?? cause?.message ?? String(err)}`,
      { cause: err },
    );
  }
}

let lastAnswerAt: number | undefined;

/** What every answer must be: never 5xx; any non-2xx is the spec's error body (2.11). */
export function checkAnswer(res: Sent): string | undefined {
  if (res.status >= 500) return `server error ${res.status}: ${res.text.slice(0, 300)}`;
  if (res.status >= 200 && res.status < 300) return undefined;
  let body: { error?: unknown; requestId?: unknown; retryable?: unknown; message?: unknown };
  try {
    body = JSON.parse(res.text);
  } catch {
    return `non-JSON error body for ${res.status}: ${res.text.slice(0, 200)}`;
  }
  if (typeof body.error !== 'string' || typeof body.message !== 'string' || typeof body.retryable !== 'boolean') {
    return `error body without error/message/retryable: ${res.text.slice(0, 200)}`;
  }
  if (body.requestId !== res.requestIdHeader)
    return `requestId ${String(body.requestId)} differs from X-Request-Id ${res.requestIdHeader}`;
  return undefined;
}

/**
 * After the run: every workflow of the fuzz account is completed or waiting as it should, none
 * failed, terminated or timed out, and none has an activity stuck retrying.
 */
export async function workflowProblems(t: FuzzTarget): Promise<string[]> {
  const problems: string[] = [];
  const { client: temporal } = t.h.services.temporal;
  for await (const wf of temporal.workflow.list({ query: `AccountId = '${t.accountId}'` })) {
    if (!['RUNNING', 'COMPLETED', 'CONTINUED_AS_NEW'].includes(wf.status.name))
      problems.push(`${wf.workflowId}: ${wf.status.name}`);
    if (wf.status.name !== 'RUNNING') continue;
    const desc = await temporal.workflow.getHandle(wf.workflowId, wf.runId).describe();
    for (const a of desc.raw.pendingActivities ?? []) {
      if ((a.attempt ?? 1) > 2)
        problems.push(`${wf.workflowId}: activity ${a.activityType?.name} retrying (attempt ${a.attempt})`);
    }
  }
  return problems;
}
