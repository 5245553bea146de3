import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startHarness, type Harness } from '../helpers/harness';
import { client } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// The operator command `npx wholesale ...` (issue 2 item 7), run as a real process against DATABASE_URL.
const root = resolve(__dirname, '..', '..');
const run = promisify(execFile);
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

async function wholesale(...args: string[]) {
  const { stdout } = await run(process.execPath, [join(root, 'bin', 'wholesale.js'), ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: h.databaseUrl },
  });
  return JSON.parse(stdout);
}

test('accounts create, keys create, balance adjust, stock import and products list', async () => {
  const created = await wholesale('accounts', 'create', '--name', 'Reseller One');
  expect(created).toEqual({ accountId: expect.any(String), apiKey: expect.stringMatching(/^wsk_/) });
  const api = client(h.apiUrl, created.apiKey);
  expect((await api.get('/balance')).body.balance).toBe('0.00');

  const second = await wholesale('keys', 'create', '--account', created.accountId);
  expect(second.apiKey).not.toBe(created.apiKey);
  expect((await client(h.apiUrl, second.apiKey).get('/balance')).status).toBe(200);

  expect(await wholesale('balance', 'adjust', '--account', created.accountId, '--amount', '12.34', '--note', 'wire 42'))
    .toEqual({ accountId: created.accountId, amount: '12.34', balanceAfter: '12.34' });
  expect((await wholesale('balance', 'adjust', '--account', created.accountId, '--amount=-2.34', '--note', 'fee')).balanceAfter).toBe('10.00');
  const tx = (await api.get('/transactions')).body.transactions;
  expect(tx.map((t: any) => [t.type, t.amount, t.balanceAfter, t.note])).toEqual([
    ['adjust', '-2.34', '10.00', 'fee'], ['adjust', '12.34', '12.34', 'wire 42'],
  ]);
  await expectLedgerMatchesBalance(h, created.accountId);

  const file = join(mkdtempSync(join(tmpdir(), 'stock-')), 'codes.txt');
  writeFileSync(file, 'WXYZ-2345-6789-ABCD\nwxyz 2345 6789 abce\n\nWXYZ-2345-6789-ABCD\n');
  expect(await wholesale('stock', 'import', '--product', 'prod_spotify_premium_1m', '--file', file))
    .toMatchObject({ productId: 'prod_spotify_premium_1m', imported: 2 });
  expect((await api.get('/products/prod_spotify_premium_1m')).body.stock).toBe(2);

  const products = await wholesale('products', 'list');
  expect(products.find((p: any) => p.id === 'prod_api_order_test')).toMatchObject({ listed: false, prices: { Lv1: '0.01', Lv5: '0.01' } });
  const picker = await wholesale('products', 'group', 'apple-gift-card-us');
  expect(picker.map((p: any) => p.denomination)).toEqual(['10', '25', '50', '100']);
});

test('bad input is refused with a message and a non-zero exit', async () => {
  await expect(wholesale('balance', 'adjust', '--account', '00000000-0000-0000-0000-000000000000', '--amount', 'x', '--note', 'n'))
    .rejects.toMatchObject({ code: 1 });
  await expect(wholesale('nonsense')).rejects.toMatchObject({ code: 2 });
});
