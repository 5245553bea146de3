import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startHarness, type Harness } from '../helpers/harness';
import { auditRows } from '../helpers/console';
import { client } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// The operator command `npx wholesale ...` (issue 2 item 7), run as a real process against DATABASE_URL.
// Commands that change money, codes, access, staff or prices name their operator (--by) and reason,
// and each is an audit row before it acts (README, Operations: the wholesale command).
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

  const second = await wholesale(
    'keys',
    'create',
    '--account',
    created.accountId,
    '--by',
    'Olga Ops',
    '--reason',
    'second integration',
  );
  expect(second.apiKey).not.toBe(created.apiKey);
  expect((await client(h.apiUrl, second.apiKey).get('/balance')).status).toBe(200);

  expect(
    await wholesale(
      'balance',
      'adjust',
      '--account',
      created.accountId,
      '--amount',
      '12.34',
      '--note',
      'wire 42',
      '--by',
      'Olga Ops',
    ),
  ).toEqual({ accountId: created.accountId, amount: '12.34', balanceAfter: '12.34' });
  expect(
    (
      await wholesale(
        'balance',
        'adjust',
        '--account',
        created.accountId,
        '--amount=-2.34',
        '--note',
        'fee',
        '--by',
        'Olga Ops',
      )
    ).balanceAfter,
  ).toBe('10.00');
  const tx = (await api.get('/transactions')).body.transactions;
  expect(tx.map((t: any) => [t.type, t.amount, t.balanceAfter, t.note])).toEqual([
    ['adjust', '-2.34', '10.00', 'fee'],
    ['adjust', '12.34', '12.34', 'wire 42'],
  ]);
  await expectLedgerMatchesBalance(h, created.accountId);

  const file = join(mkdtempSync(join(tmpdir(), 'stock-')), 'codes.txt');
  writeFileSync(file, 'WXYZ-2345-6789-ABCD\nwxyz 2345 6789 abce\n\nWXYZ-2345-6789-ABCD\n');
  expect(
    await wholesale(
      'stock',
      'import',
      '--product',
      'prod_spotify_premium_1m',
      '--file',
      file,
      '--by',
      'Olga Ops',
      '--reason',
      'batch 7 from the supplier',
    ),
  ).toMatchObject({ productId: 'prod_spotify_premium_1m', imported: 2 });
  expect((await api.get('/products/prod_spotify_premium_1m')).body.stock).toBe(2);
  expect(
    (await auditRows(h, `action in ('key.create', 'stock.import')`)).map((r) => [
      r.action,
      r.actor,
      r.subject_id,
      r.reason,
      r.details.lines ?? null,
      r.outcome,
    ]),
  ).toEqual([
    ['key.create', 'cli:Olga Ops', created.accountId, 'second integration', null, 'ok'],
    ['stock.import', 'cli:Olga Ops', 'prod_spotify_premium_1m', 'batch 7 from the supplier', 3, 'ok'],
  ]);

  const products = await wholesale('products', 'list');
  expect(products.find((p: any) => p.id === 'prod_api_order_test')).toMatchObject({
    listed: false,
    prices: { Lv1: '0.01', Lv5: '0.01' },
  });
  const picker = await wholesale('products', 'group', 'apple-gift-card-us');
  expect(picker.map((p: any) => p.denomination)).toEqual(['10', '25', '50', '100']);
});

test('bad input is refused with a message and a non-zero exit', async () => {
  await expect(
    wholesale(
      'balance',
      'adjust',
      '--account',
      '00000000-0000-0000-0000-000000000000',
      '--amount',
      'x',
      '--note',
      'n',
      '--by',
      'Olga Ops',
    ),
  ).rejects.toMatchObject({ code: 1 });
  await expect(wholesale('nonsense')).rejects.toMatchObject({ code: 2 });
});

test('balance adjust without --by is refused and moves nothing; with it, one audit row names the operator, the reason and the outcome', async () => {
  const { accountId } = await wholesale('accounts', 'create', '--name', 'Audited Reseller');
  const refused = await wholesale(
    'balance',
    'adjust',
    '--account',
    accountId,
    '--amount',
    '50.00',
    '--note',
    'goodwill',
  ).catch((err) => err);
  expect(refused.code).toBe(1);
  expect(JSON.parse(refused.stderr)).toEqual({
    error: 'invalid_input',
    message: '--by NAME is required: who runs this command, for the audit log',
  });
  expect((await expectLedgerMatchesBalance(h, accountId)).rows).toEqual([]);
  expect(await auditRows(h, 'account_id = ?', [accountId])).toEqual([]);

  expect(
    (
      await wholesale(
        'balance',
        'adjust',
        '--account',
        accountId,
        '--amount',
        '50.00',
        '--note',
        'goodwill',
        '--by',
        'Olga Ops',
      )
    ).balanceAfter,
  ).toBe('50.00');
  const l = await expectLedgerMatchesBalance(h, accountId);
  expect([l.balance, l.rows.map((r) => [r.type, r.amount, r.balance_after])]).toEqual([
    '50.00',
    [['adjust', '50.00', '50.00']],
  ]);
  // A refused adjustment (below zero) keeps its row, with the refusal as its outcome.
  await expect(
    wholesale('balance', 'adjust', '--account', accountId, '--amount=-80.00', '--note', 'clawback', '--by', 'Olga Ops'),
  ).rejects.toMatchObject({ code: 1 });
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('50.00');
  const rows = await auditRows(h, 'account_id = ?', [accountId]);
  expect(
    rows.map((r) => ({
      actor: r.actor,
      role: r.role,
      action: r.action,
      subject: r.subject_id,
      reason: r.reason,
      amount: r.details.amount,
      outcome: r.outcome,
    })),
  ).toEqual([
    {
      actor: 'cli:Olga Ops',
      role: 'cli',
      action: 'balance.adjust',
      subject: accountId,
      reason: 'goodwill',
      amount: '50.00',
      outcome: 'ok',
    },
    {
      actor: 'cli:Olga Ops',
      role: 'cli',
      action: 'balance.adjust',
      subject: accountId,
      reason: 'clawback',
      amount: '-80.00',
      outcome: 'insufficient_balance',
    },
  ]);
  expect(rows.map((r) => r.request_id)).toEqual([null, null]);
});

test.each<[string, string[], RegExp]>([
  [
    'keys create',
    ['keys', 'create', '--account', '00000000-0000-0000-0000-000000000000', '--reason', 'r'],
    /--by NAME is required/,
  ],
  [
    'stock import',
    ['stock', 'import', '--product', 'prod_spotify_premium_1m', '--file', '/dev/null', '--by', 'Olga Ops'],
    /--reason TEXT is required/,
  ],
  [
    'staff create',
    ['staff', 'create', '--role', 'admin', '--email', 'x@example.com', '--name', 'X', '--reason', 'first admin'],
    /--by NAME is required/,
  ],
  ['support redemption', ['support', 'redemption', 'reject', 'rdm_x', '--by', 'Olga Ops'], /--reason TEXT is required/],
])('%s without its operator or reason is refused before it acts', async (_name, args, message) => {
  const before = (await auditRows(h)).length;
  const refused = await wholesale(...args).catch((err) => err);
  expect([refused.code, JSON.parse(refused.stderr)]).toEqual([
    1,
    { error: 'invalid_input', message: expect.stringMatching(message) },
  ]);
  expect((await auditRows(h)).length).toBe(before);
});

test('catalog seed is an audit row with the operator and the reason', async () => {
  await wholesale('catalog', 'seed', '--by', 'Olga Ops', '--reason', 'demo products for a trial');
  expect((await auditRows(h, `action = 'catalog.seed'`)).map((r) => [r.actor, r.reason, r.outcome])).toEqual([
    ['cli:Olga Ops', 'demo products for a trial', 'ok'],
  ]);
});
