import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../helpers/harness';
import { call, eventually } from '../helpers/http';

// Issue 2 "done when": `npm start` on a fresh state folder serves GET /products with the key it
// prints, the Temporal UI answers, and stopping and starting again keeps the account and its data.
const root = resolve(__dirname, '..', '..');

interface Started {
  child: ChildProcess;
  output: () => string;
}

function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  return new Promise((ok, fail) => {
    const timer = setInterval(() => {
      if (/Demo API key\s+\S+/.test(out)) {
        clearInterval(timer);
        ok({ child, output: () => out });
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(timer);
      fail(new Error(`npm start exited with ${code}:\n${out}`));
    });
  });
}

function stop(s: Started): Promise<number | null> {
  return new Promise((ok) => {
    s.child.once('exit', (code) => ok(code));
    s.child.kill('SIGTERM');
  });
}

const field = (out: string, label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(out)?.[1];

test('npm start runs the whole stack, prints the URLs and a demo key, and keeps data across restarts', async () => {
  const stateRoot = mkdtempSync(join(tmpdir(), 'wholesale-start-'));
  chmodSync(stateRoot, 0o755); // as root, Postgres runs as `postgres` and must reach its data dir
  const env = {
    STATE_DIR: join(stateRoot, 'state'),
    PORT: String(await freePort()),
    EMBEDDED_PG_PORT: String(await freePort()),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
  };
  const first = await start(env);
  const apiUrl = field(first.output(), 'Wholesale API')!;
  const uiUrl = field(first.output(), 'Temporal UI')!;
  const key = field(first.output(), 'Demo API key')!;
  const accountId = field(first.output(), 'Demo account')!;
  expect(apiUrl).toBe(`http://127.0.0.1:${env.PORT}/wholesale/v1`);
  expect(uiUrl).toBe(`http://127.0.0.1:${env.TEMPORAL_UI_PORT}`);

  const products = await call(`${apiUrl}/products`, { key });
  expect(products.status).toBe(200);
  expect(products.body.products.length).toBeGreaterThan(5);
  await eventually(async () => (await fetch(uiUrl).catch(() => undefined))?.status === 200, 30_000, 250);
  const placed = await call(`${apiUrl}/orders`, { key, body: { externalOrderId: 'restart-1', productId: 'prod_api_order_test', qty: 1 } });
  expect(placed.body.status).toBe('delivered');
  expect(await stop(first)).toBe(0);

  const second = await start(env);
  expect(field(second.output(), 'Demo account')).toBe(accountId);
  expect(field(second.output(), 'Demo API key')).toBe(key);
  const orders = await call(`${apiUrl}/orders`, { key });
  expect(orders.body.orders.map((o: any) => o.external_order_id)).toEqual(['restart-1']);
  expect((await call(`${apiUrl}/balance`, { key })).body.balance).toBe('99.99');
  // The order workflow's history survived in the dev server's database file.
  expect(await stop(second)).toBe(0);
}, 240_000);
