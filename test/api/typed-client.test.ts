import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startHarness, type Harness } from '../helpers/harness';
import { call } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// Issue 13 item 5: a typed client generated from the published document with openapi-typescript
// (default options) plus openapi-fetch compiles with `tsc --strict`, and the example built on it
// (examples/typed-client) lists products, places an order, reads it and lists transactions
// against the real stack. The committed types must be what the document generates today.
const root = resolve(__dirname, '..', '..');
const example = join(root, 'examples', 'typed-client');
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

test('the committed schema.d.ts is what openapi-typescript makes of the document today', () => {
  return (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'typed-client-'));
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify((await call(`${h.apiUrl}/openapi.json`)).body));
    const gen = spawnSync(
      process.execPath,
      [
        join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
        join(dir, 'openapi.json'),
        '-o',
        join(dir, 'schema.d.ts'),
      ],
      {
        cwd: root,
        encoding: 'utf8',
      },
    );
    expect(gen.status).toBe(0);
    const generated = readFileSync(join(dir, 'schema.d.ts'), 'utf8');
    if (process.env.UPDATE_TYPED_CLIENT) writeFileSync(join(example, 'schema.d.ts'), generated);
    expect(readFileSync(join(example, 'schema.d.ts'), 'utf8')).toBe(generated);
  })();
}, 60_000);

test('the example compiles with tsc --strict', () => {
  const tsc = spawnSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', join(example, 'tsconfig.json')],
    { cwd: root, encoding: 'utf8' },
  );
  expect(tsc.stdout + tsc.stderr).toBe('');
  expect(tsc.status).toBe(0);
}, 120_000);

test('the example runs against the stack: products, an order, its detail, the ledger', async () => {
  const { accountId, apiKey } = await h.account('50.00');
  const child = spawn(process.execPath, ['--import', 'tsx', join(example, 'client.ts')], {
    cwd: root,
    env: { ...process.env, WHOLESALE_API_URL: h.apiUrl, WHOLESALE_API_KEY: apiKey, EXAMPLE_ORDER_ID: 'typed-client-1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (err += String(d)));
  const code = await new Promise<number | null>((r) => child.once('close', r));
  expect(err).toBe('');
  expect(code).toBe(0);
  const steps = Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .map((l) => [l.step, l.value]),
  );
  expect(steps.products.count).toBeGreaterThan(5);
  expect(steps.order).toMatchObject({ status: 'delivered', codes: 1 });
  expect(steps.detail.status).toBe('delivered');
  expect(steps.transactions).toEqual([
    {
      type: 'purchase',
      amount: `-${steps.products.price}`,
      balanceAfter: expect.any(String),
      orderId: steps.order.orderId,
    },
  ]);
  // The money moved once, where it lives.
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows.map((r) => r.type)).toEqual(['adjust', 'purchase']);
  expect(steps.transactions[0].balanceAfter).toBe(money.balance);
}, 120_000);
