import { EXPORT_COLUMNS } from '../../src/services/exports/export-csv';
import { signedUp } from '../helpers/account-session';
import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { seedLedger, seedOrders } from '../helpers/seed-rows';

// The account area's exports and batch upload over HTTP (issue 40 items 3 and 4, "from the account
// area"): the same services as the API behind CSRF-protected forms. "Download now" answers with the
// CSV of whole UTC days (both included); "Prepare a file" starts a job listed with its link; a range
// too large to stream, a bad day, a file that is not the batch's CSV are shown on the page and
// change nothing.
let h: Harness;
const DAY = 86_400_000;
const day = (offset: number) => new Date(Math.floor(Date.now() / DAY) * DAY + offset * DAY);
const ymd = (d: Date) => d.toISOString().slice(0, 10);

beforeAll(async () => {
  h = await startHarness({ EXPORT_STREAM_MAX_ROWS: '40', EXPORT_PAGE_ROWS: '9' });
});
afterAll(() => h?.stop());

/** A signed-in reseller with 48 orders, two a day from 30 days ago, and a ledger of 20 rows a day apart. */
async function reseller() {
  const r = await signedUp(h);
  await seedOrders(h, r.accountId, 48, { tag: r.accountId.slice(0, 8), start: day(-30), everyMs: DAY / 2 });
  await seedLedger(h, r.accountId, 20, { tag: r.accountId.slice(0, 8), start: day(-30), everyMs: DAY });
  return r;
}

const form = (fields: Record<string, string>) => ({
  kind: 'orders',
  mode: 'now',
  nonce: `web-${Math.random().toString(36).slice(2, 14)}`,
  ...fields,
});

test('Download now: the CSV of the days chosen, both included; Prepare a file: listed until ready, then its link gives the same file', async () => {
  const { session } = await reseller();
  const fields = { from: ymd(day(-30)), to: ymd(day(-21)) };
  const now = await session.submit('/account/exports', '/account/exports', form(fields));
  expect(now.status).toBe(200);
  expect(now.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
  const records = now.text.trimEnd().split('\r\n');
  expect(records[0]).toBe(EXPORT_COLUMNS.orders.join(','));
  expect(records).toHaveLength(1 + 20);

  const prepared = await session.submit('/account/exports', '/account/exports', form({ ...fields, mode: 'file' }));
  expect(prepared.status).toBe(303);
  expect(prepared.location).toBe('/account/exports?notice=preparing');
  const link = await eventually(
    async () => {
      const page = await session.get('/account/exports');
      return /data-testid="export-download"/.test(page.text)
        ? /<a href="([^"]+)" rel="noreferrer" download/.exec(page.text)![1].replace(/&amp;/g, '&')
        : undefined;
    },
    30_000,
    200,
    'the prepared file listed with its link',
  );
  const file = await fetch(link);
  expect(file.status).toBe(200);
  expect(await file.text()).toBe(now.text);
});

test('a range too large to stream, or a day that does not exist, is shown on the page; nothing is prepared', async () => {
  const { session, accountId } = await reseller();
  const big = await session.submit(
    '/account/exports',
    '/account/exports',
    form({ from: ymd(day(-30)), to: ymd(day(0)) }),
  );
  expect(big.status).toBe(400);
  expect(big.text).toContain('These days hold 48 rows, more than can be downloaded at once: choose “Prepare a file”.');
  expect(big.text).toContain(`value="${ymd(day(-30))}"`);
  const bad = await session.submit(
    '/account/exports',
    '/account/exports',
    form({ kind: 'ledger', from: '2026-02-30', to: ymd(day(0)) }),
  );
  expect(bad.status).toBe(400);
  expect(bad.text).toContain('data-testid="error"');
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute<{ n: string }[]>('select count(*) as n from exports where account_id = ?', [accountId]);
  expect(Number(n)).toBe(0);
});

test.each([
  ['a header without qty', 'externalOrderId,productId\r\na-1,prod_api_order_test\r\n', 'The header lacks qty'],
  ['a quote left open', 'externalOrderId,productId,qty\r\n"a-1,prod_api_order_test,1\r\n', 'The file is not CSV'],
  [
    'a line with qty 0',
    'externalOrderId,productId,qty\r\na-1,prod_api_order_test,1\r\na-2,prod_api_order_test,0\r\n',
    'Line 3, qty:',
  ],
  ['a line with qty "two"', 'externalOrderId,productId,qty\r\na-1,prod_api_order_test,two\r\n', 'Line 2, qty:'],
  ['no lines', 'externalOrderId,productId,qty\r\n', 'A batch holds 1 to 5000 lines'],
])('a batch file with %s is refused on the page, naming what to fix; no batch', async (_name, csv, message) => {
  const { session, accountId } = await signedUp(h);
  const res = await session.submit('/account/batches', '/account/batches', { csv, nonce: 'web-abcdefghijkl' });
  expect(res.status).toBe(400);
  expect(res.text).toContain(message);
  const [{ n }] = await h.services.orm.em
    .fork()
    .execute<{ n: string }[]>('select count(*) as n from batches where account_id = ?', [accountId]);
  expect(Number(n)).toBe(0);
});
