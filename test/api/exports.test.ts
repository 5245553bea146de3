import { exportWorkflowId } from '../../src/contracts/exports-contract';
import { parseCsvWithHeader } from '../../src/domain/csv';
import { EXPORT_COLUMNS } from '../../src/services/exports/export-csv';
import { startHarness, type Harness } from '../helpers/harness';
import { call, client, eventually } from '../helpers/http';
import { decodedHistoryText } from '../helpers/history';
import { seedLedger, seedOrders } from '../helpers/seed-rows';
import { startReceiver, verifySignature, type Receiver } from '../helpers/webhook-receiver';

// Exports (issue 40 item 3), over real HTTP: a date range of orders or ledger rows as CSV (RFC 4180,
// UTF-8, ISO 8601 UTC, the API's own values), streamed when small, refused when larger than
// EXPORT_STREAM_MAX_ROWS, and as an export job whose file (written in pages of EXPORT_PAGE_ROWS by
// its workflow) is byte for byte the streamed one, downloaded by a link that needs no key, works
// for EXPORT_LINK_SECONDS and is then deleted with the file. Pages of 7 rows, so every range here
// spans many pages.
const LINK_SECONDS = 12;
let h: Harness;
let receiver: Receiver;
let a: Awaited<ReturnType<typeof reseller>>;
const HOUR = 3600_000;
// Seeded rows a month back, one an hour (orders) and one every 30 minutes (ledger), from midnight.
const start = new Date(Math.floor((Date.now() - 30 * 24 * HOUR) / (24 * HOUR)) * 24 * HOUR);
const at = (hours: number) => new Date(start.getTime() + hours * HOUR).toISOString();

beforeAll(async () => {
  h = await startHarness({
    EXPORT_STREAM_MAX_ROWS: '80',
    EXPORT_PAGE_ROWS: '7',
    EXPORT_LINK_SECONDS: String(LINK_SECONDS),
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
  });
  receiver = await startReceiver();
  a = await reseller('100.00');
  const { secret } = (await a.api.put('/webhook', { url: receiver.url })).body;
  a.secret = secret;
  for (const id of ['exp-real-1', 'exp-real-2'])
    expect(
      (await a.api.post('/orders', { externalOrderId: id, productId: 'prod_chatgpt_plus_1m', qty: 1 })).status,
    ).toBe(200);
  await seedOrders(h, a.accountId, 93, { tag: 'exp', start, everyMs: HOUR });
  await seedLedger(h, a.accountId, 60, { tag: 'exp', start, everyMs: HOUR / 2 });
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

async function reseller(balance: string) {
  const acct = await h.account(balance);
  return { ...acct, api: client(h.apiUrl, acct.apiKey), secret: '' };
}

const toUnix = (iso: string) => (iso === '' ? null : Date.parse(iso) / 1000);
const orNull = (s: string) => (s === '' ? null : s);

/** A CSV order record read back into the API's types (GET /orders/{id} without codes and payment link). */
const orderFromCsv = (r: Record<string, string>) => ({
  id: r.id,
  external_order_id: orNull(r.external_order_id),
  channel: r.channel,
  product_id: orNull(r.product_id),
  order_number: r.order_number,
  qty: Number(r.qty),
  unit_price: r.unit_price,
  amount: r.amount,
  currency: r.currency,
  status: r.status,
  deliveryType: orNull(r.deliveryType),
  fulfillmentStatus: orNull(r.fulfillmentStatus),
  fulfilledQuantity: Number(r.fulfilledQuantity),
  errorCode: orNull(r.errorCode),
  resolution: orNull(r.resolution),
  redeemUrl: orNull(r.redeemUrl),
  created_at: toUnix(r.created_at),
  paid_at: toUnix(r.paid_at),
});

const ledgerFromCsv = (r: Record<string, string>) => ({
  id: r.id,
  type: r.type,
  amount: r.amount,
  balanceAfter: r.balanceAfter,
  order_id: orNull(r.order_id),
  note: orNull(r.note),
  created_at: toUnix(r.created_at),
});

/** Every item of a GET list, walked page by page with its cursor. */
async function walk(path: string, key: string): Promise<any[]> {
  const items: any[] = [];
  for (let cursor: string | null = null; ;) {
    const res: { status: number; body: any } = await a.api.get(
      `${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(res.status).toBe(200);
    items.push(...res.body[key]);
    if (!res.body.hasMore) return items;
    cursor = res.body.nextCursor;
  }
}

const inRange = (createdAt: number, from: string, to: string) =>
  createdAt >= Date.parse(from) / 1000 && createdAt < Date.parse(to) / 1000;

describe('streamed CSV of a small range', () => {
  test("orders: RFC 4180 with a header and CRLF line ends, [from, to) oldest first, each record the API's GET /orders/{id} values", async () => {
    const [from, to] = [at(10), at(70)];
    const res = await a.api.get(`/exports/orders.csv?from=${from}&to=${encodeURIComponent(to)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="orders-.*\.csv"$/);
    expect(res.text.startsWith(`${EXPORT_COLUMNS.orders.join(',')}\r\n`)).toBe(true);
    expect(res.text.endsWith('\r\n')).toBe(true);
    expect(res.text.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    const { rows } = parseCsvWithHeader(res.text);
    // The seeded order at `from` is in, the one at `to` is not.
    expect(rows.map((r) => r.id)).toEqual(Array.from({ length: 60 }, (_, i) => `ord_exp_${i + 11}`));

    const listed = (await walk('/orders', 'orders')).filter((o) => o.id.startsWith('ord_exp_'));
    const details = await Promise.all(rows.map(async (r) => (await a.api.get(`/orders/${r.id}`)).body));
    const apiValues = details.map(({ codes: _c, paymentUrl: _p, product_name: _n, ...d }) => d);
    expect(rows.map(orderFromCsv)).toEqual(apiValues);
    expect(details.every((d) => inRange(d.created_at, from, to))).toBe(true);
    // Its neighbours, an hour before and exactly at `to`, are outside; GET /orders lists the same rows newest first.
    for (const id of ['ord_exp_10', 'ord_exp_71'])
      expect(inRange((await a.api.get(`/orders/${id}`)).body.created_at, from, to)).toBe(false);
    const ids = rows.map((r) => r.id);
    expect(
      listed
        .map((o) => o.id)
        .filter((id) => ids.includes(id))
        .reverse(),
    ).toEqual(ids);
  });

  test('ledger: notes holding commas, quotes and line breaks are quoted, and every record parses back to GET /transactions', async () => {
    const [from, to] = [at(0), at(30)];
    const res = await a.api.get(`/exports/ledger.csv?from=${from}&to=${to}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('"goodwill, ""VIP""\r\nsecond line"');
    const { header, rows } = parseCsvWithHeader(res.text);
    expect(header).toEqual(EXPORT_COLUMNS.ledger);
    const listed = (await walk('/transactions', 'transactions'))
      .filter((t) => inRange(t.created_at, from, to))
      .reverse();
    expect(listed).toHaveLength(60);
    expect(rows.map(ledgerFromCsv)).toEqual(listed);
  });

  test('an empty range is the header alone; a range of more than EXPORT_STREAM_MAX_ROWS rows is refused before anything is sent', async () => {
    const empty = await a.api.get(`/exports/orders.csv?from=2001-01-01&to=2001-02-01`);
    expect(empty.status).toBe(200);
    expect(empty.text).toBe(`${EXPORT_COLUMNS.orders.join(',')}\r\n`);
    const big = await a.api.get(`/exports/orders.csv?from=${at(-1)}&to=${at(100)}`);
    expect(big.status).toBe(400);
    expect(big.body).toMatchObject({
      error: 'invalid_input',
      details: { reason: 'too_many_rows', rows: 93, maxRows: 80 },
    });
  });

  test.each([
    ['from after to', `from=${at(5)}&to=${at(1)}`],
    ['from equal to to', `from=${at(5)}&to=${at(5)}`],
    ['no to', `from=${at(5)}`],
    ['not a date', `from=yesterday&to=${at(5)}`],
    ['an impossible date', 'from=2026-02-30&to=2026-03-02'],
    ['before 1970', 'from=1969-12-31&to=1970-01-02'],
  ])('%s: 400 invalid_input', async (_name, query) => {
    const res = await a.api.get(`/exports/ledger.csv?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_input');
  });
});

describe('an export job', () => {
  const range = { from: at(10), to: at(70) };

  async function ready(exportId: string) {
    return eventually(
      async () => {
        const res = await a.api.get(`/exports/${exportId}`);
        return res.body.status === 'ready' ? res.body : undefined;
      },
      60_000,
      200,
      `export ${exportId} ready`,
    );
  }

  test('writes the file the streamed export would send, downloadable by its link without a key, and announces it with export.ready', async () => {
    const created = await a.api.post('/exports', { externalExportId: 'job-1', kind: 'orders', ...range });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      exportId: expect.stringMatching(/^exp_/),
      externalExportId: 'job-1',
      kind: 'orders',
      totalRows: 60,
      reused: false,
    });
    const done = await ready(created.body.exportId);
    expect(done).toMatchObject({
      rows: 60,
      totalRows: 60,
      downloadUrl: expect.stringContaining(`/wholesale/v1/exports/${created.body.exportId}/download?token=`),
    });
    expect(done.expiresAt - done.readyAt).toBe(LINK_SECONDS);

    const file = await call(done.downloadUrl);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-length')).toBe(String(Buffer.byteLength(file.text)));
    const streamed = await a.api.get(`/exports/orders.csv?from=${range.from}&to=${range.to}`);
    expect(file.text).toBe(streamed.text);

    const [event] = await receiver.waitFor(1, (all) =>
      all.filter((r) => r.body?.event === 'export.ready' && r.body.exportId === created.body.exportId),
    );
    expect(verifySignature(a.secret, event.raw, event.headers['x-wholesale-signature'])).toBe(true);
    expect(event.body).toEqual({
      eventId: expect.stringMatching(/^evt_/),
      event: 'export.ready',
      timestamp: expect.any(Number),
      exportId: created.body.exportId,
      externalExportId: 'job-1',
      kind: 'orders',
      from: range.from.replace('.000Z', 'Z'),
      to: range.to.replace('.000Z', 'Z'),
      rows: 60,
      expiresAt: done.expiresAt,
    });
    // The link travels nowhere but the owner's answers: not in the event, not in the workflow's history (nor a row of the file).
    const token = new URL(done.downloadUrl).searchParams.get('token')!;
    expect(event.raw).not.toContain(token);
    const history = await decodedHistoryText(
      h.services.temporal.client,
      process.env.TEMPORAL_PAYLOAD_KEYS!,
      exportWorkflowId(created.body.exportId),
    );
    expect(history).not.toContain(token);
    expect(history).not.toContain('ord_exp_');
  });

  test('the same externalExportId is the same export; with another range it is an idempotency_conflict', async () => {
    const first = await a.api.post('/exports', { externalExportId: 'job-2', kind: 'ledger', ...range });
    const again = await a.api.post('/exports', { externalExportId: 'job-2', kind: 'ledger', ...range });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ exportId: first.body.exportId, reused: true });
    const other = await a.api.post('/exports', {
      externalExportId: 'job-2',
      kind: 'ledger',
      from: range.from,
      to: at(71),
    });
    expect(other.status).toBe(409);
    expect(other.body.error).toBe('idempotency_conflict');
    await ready(first.body.exportId);
  });

  test("only its owner sees it; a wrong token, another export's token or no token is 404 or 400, never the file", async () => {
    const created = await a.api.post('/exports', { externalExportId: 'job-3', kind: 'ledger', ...range });
    const done = await ready(created.body.exportId);
    const stranger = await reseller('0');
    expect((await stranger.api.get(`/exports/${created.body.exportId}`)).status).toBe(404);
    const url = new URL(done.downloadUrl);
    const token = url.searchParams.get('token')!;
    const otherDone = await ready(
      (await a.api.post('/exports', { externalExportId: 'job-4', kind: 'ledger', ...range })).body.exportId,
    );
    const otherToken = new URL(otherDone.downloadUrl).searchParams.get('token')!;
    const wrong = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const t of [wrong, otherToken, `${token}=`]) {
      const res = await call(`${url.origin}${url.pathname}?token=${encodeURIComponent(t)}`);
      expect([t, res.status, res.body.error]).toEqual([t, 404, 'not_found']);
    }
    expect((await call(`${url.origin}${url.pathname}`)).status).toBe(400);
    expect((await call(`${url.origin}/wholesale/v1/exports/exp_unknown/download?token=${token}`)).status).toBe(404);
  });

  test('when its link expires, the file is deleted and the link answers 404', async () => {
    const created = await a.api.post('/exports', { externalExportId: 'job-5', kind: 'orders', from: at(0), to: at(3) });
    const done = await ready(created.body.exportId);
    expect((await call(done.downloadUrl)).status).toBe(200);
    const expired = await eventually(
      async () => {
        const res = await a.api.get(`/exports/${created.body.exportId}`);
        return res.body.status === 'expired' ? res.body : undefined;
      },
      (LINK_SECONDS + 30) * 1000,
      500,
      'export expired',
    );
    expect(expired.downloadUrl).toBeNull();
    expect((await call(done.downloadUrl)).status).toBe(404);
    await eventually(
      async () => {
        const [row] = await h.services.orm.em
          .fork()
          .execute<{ status: string; pages: string }[]>(
            `select e.status, (select count(*) from export_pages p where p.export_id = e.id) as pages from exports e where e.id = ?`,
            [created.body.exportId],
          );
        return row.status === 'expired' && Number(row.pages) === 0;
      },
      30_000,
      250,
      'file deleted',
    );
  }, 90_000);
});
