import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readStateSecrets } from '../../src/dev/state-secrets';
import { EncryptionCodec, parseKeyRing } from '../../src/temporal/codec';
import { freePort } from '../helpers/harness';
import { call, eventually } from '../helpers/http';

// Issue 2 "done when": `npm start` on a fresh state folder serves GET /products with the key it
// prints, the Temporal UI answers, and stopping and starting again keeps the account and its data.
const root = resolve(__dirname, '..', '..');

interface Started {
  child: ChildProcess;
  output: () => string;
}

// Stacks still running when a test ends (an assertion failed) are stopped, so jest never waits on them.
const running = new Set<ChildProcess>();
afterEach(async () => {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((ok) => {
          const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
          child.once('exit', () => {
            clearTimeout(kill);
            ok();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}, 60_000);

function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    // Not the test run's payload key: like on a fresh machine, npm start makes its own under STATE_DIR.
    env: {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'TEMPORAL_PAYLOAD_KEYS')),
      ...env,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
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
  // Issue 13: the banner names the API reference and that loopback webhook receivers work here.
  expect(field(first.output(), 'API reference')).toBe(`${apiUrl}/docs`);
  expect(first.output()).toMatch(/Webhooks\s+loopback http:\/\/ receivers are allowed here/);
  expect((await fetch(`${apiUrl}/docs`)).status).toBe(200);
  // Issue 11 item 5: development runs on the built-in secrets, and says so once.
  expect(first.output().match(/built-in development secrets in use/g)).toHaveLength(1);

  const products = await call(`${apiUrl}/products`, { key });
  expect(products.status).toBe(200);
  expect(products.body.products.length).toBeGreaterThan(5);
  await eventually(async () => (await fetch(uiUrl).catch(() => undefined))?.status === 200, 30_000, 250);
  // Issue 12: the banner names the codec endpoint (no token in it) and the CLI command with
  // the token in its Authorization header, the Temporal UI is configured with that endpoint, and it
  // decodes, for the UI's origin and with the token `npm start` keeps under STATE_DIR (0600) in the
  // header, a payload sealed with the key kept there; the token in the path is no route.
  const codecUrl = field(first.output(), 'Codec endpoint')!;
  expect(codecUrl).toBe(`http://127.0.0.1:${env.PORT}/codec`);
  const settings = await (await fetch(`${uiUrl}/api/v1/settings`)).json();
  expect(settings.Codec).toMatchObject({ Endpoint: codecUrl });
  expect(statSync(join(env.STATE_DIR, 'secrets.json')).mode & 0o777).toBe(0o600);
  const codecToken = readStateSecrets(env.STATE_DIR).CODEC_TOKEN!;
  expect(first.output()).toContain(`--codec-endpoint ${codecUrl} --codec-auth "Bearer ${codecToken}"`);
  expect(first.output()).not.toContain(`/codec/${codecToken}`);
  const [sealed] = await new EncryptionCodec(
    parseKeyRing(readStateSecrets(env.STATE_DIR).TEMPORAL_PAYLOAD_KEYS!),
  ).encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"decoded for the UI"') }]);
  const b64 = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('base64');
  const decode = (path: string) =>
    fetch(`${codecUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-namespace': 'default',
        origin: uiUrl,
        authorization: `Bearer ${codecToken}`,
      },
      body: JSON.stringify({
        payloads: [
          {
            metadata: {
              encoding: b64(sealed.metadata!.encoding),
              'encryption-key-id': b64(sealed.metadata!['encryption-key-id']),
            },
            data: b64(sealed.data),
          },
        ],
      }),
    });
  expect((await decode(`/${codecToken}/decode`)).status).toBe(404);
  const decodeRes = await decode('/decode');
  expect(decodeRes.status).toBe(200);
  expect(decodeRes.headers.get('access-control-allow-origin')).toBe(uiUrl);
  const [decoded] = (await decodeRes.json()).payloads;
  expect(Buffer.from(decoded.data, 'base64').toString('utf8')).toBe('"decoded for the UI"');
  const placed = await call(`${apiUrl}/orders`, {
    key,
    body: { externalOrderId: 'restart-1', productId: 'prod_api_order_test', qty: 1 },
  });
  expect(placed.body.status).toBe('delivered');
  expect(await stop(first)).toBe(0);

  const second = await start(env);
  expect(field(second.output(), 'Demo account')).toBe(accountId);
  expect(field(second.output(), 'Demo API key')).toBe(key);
  // The same key and token: old histories stay readable.
  expect(field(second.output(), 'Codec endpoint')).toBe(codecUrl);
  expect(second.output()).toContain(`--codec-auth "Bearer ${codecToken}"`);
  const orders = await call(`${apiUrl}/orders`, { key });
  expect(orders.body.orders.map((o: any) => o.external_order_id)).toEqual(['restart-1']);
  expect((await call(`${apiUrl}/balance`, { key })).body.balance).toBe('99.99');
  // The order workflow's history survived in the dev server's database file.
  expect(await stop(second)).toBe(0);
}, 240_000);

// Issue 25 item 3: `PAYMENT_PROVIDER=evm npm start` runs a local chain with USDT and USDC test
// tokens, prints the one-line command that pays a checkout, and that command pays it for real.
test('PAYMENT_PROVIDER=evm npm start runs a local chain, and `wholesale dev-chain pay` pays a checkout on it', async () => {
  const stateRoot = mkdtempSync(join(tmpdir(), 'wholesale-start-evm-'));
  chmodSync(stateRoot, 0o755);
  const env = {
    STATE_DIR: join(stateRoot, 'state'),
    PORT: String(await freePort()),
    EMBEDDED_PG_PORT: String(await freePort()),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    PAYMENT_PROVIDER: 'evm',
    EVM_CHAINS: '',
    PAYMENT_SYNC_SECONDS: '1',
  };
  const started = await start(env);
  expect(started.output()).toMatch(/Local EVM chain\s+http:\/\/127\.0\.0\.1:\d+ \(chain 31337/);
  expect(started.output()).toContain('npx wholesale dev-chain pay CHECKOUT_ID');
  const apiUrl = field(started.output(), 'Wholesale API')!;
  const key = field(started.output(), 'Demo API key')!;
  const order = await call(`${apiUrl}/orders`, {
    key,
    body: { externalOrderId: 'evm-demo', productId: 'prod_chatgpt_team_1m', qty: 1, payment: 'intent' },
  });
  expect(order.body).toMatchObject({ status: 'pending', checkoutUrl: expect.stringContaining('/checkout/chk_') });

  const cli = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'dev-chain', 'pay', order.body.checkoutUrl], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  cli.stdout!.on('data', (d) => (out += String(d)));
  cli.stderr!.on('data', (d) => (out += String(d)));
  expect(await new Promise((ok) => cli.once('close', ok))).toBe(0);
  expect(JSON.parse(out)).toMatchObject({
    token: 'USDT',
    amount: '25.00',
    units: '25000000',
    txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
  });
  const delivered = await eventually(
    async () => {
      const r = await call(`${apiUrl}/orders/${order.body.orderId}`, { key });
      return r.body.status === 'delivered' ? r.body : undefined;
    },
    60_000,
    500,
  );
  expect(delivered.codes).toHaveLength(1);
  expect(await stop(started)).toBe(0);
}, 240_000);
