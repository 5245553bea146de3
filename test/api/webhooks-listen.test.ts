import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { loadConfig } from '../../src/config';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { killed } from '../helpers/processes';

// Issue 13 item 6: a developer tries webhooks on their own machine. `npx wholesale webhooks
// listen` registers a loopback receiver for the account's key (admitted in development),
// verifies every delivery's signature and schema, and prints each event; a forged delivery is
// refused and shown as such; on exit it unregisters itself.
const root = resolve(__dirname, '..', '..');
let h: Harness;
let listener: ChildProcess | undefined;
const lines: any[] = [];

beforeAll(async () => {
  h = await startHarness({ WEBHOOK_ALLOW_INSECURE_URLS: 'true' });
});
afterAll(async () => {
  await killed(listener);
  await h?.stop();
});

const printed = (pick: (l: any) => boolean) => eventually(async () => lines.find(pick), 30_000, 100);

test('listen receives and verifies a webhook.test and an order.delivered, refuses a forgery, and unregisters on exit', async () => {
  const { apiKey } = await h.account('1.00');
  const api = client(h.apiUrl, apiKey);
  listener = spawn(process.execPath, ['bin/wholesale.js', 'webhooks', 'listen', '--key', apiKey, '--api', h.apiUrl], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buffer = '';
  listener.stdout!.on('data', (d) => {
    buffer += String(d);
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const p of parts.filter(Boolean)) lines.push(JSON.parse(p));
  });
  let stderr = '';
  listener.stderr!.on('data', (d) => (stderr += String(d)));

  const ready = await printed((l) => l.listening);
  expect(ready.listening).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhook$/);
  expect((await api.get('/webhook')).body.url).toBe(ready.listening);
  // The secret is never printed.
  expect(JSON.stringify(lines)).not.toMatch(/whsec_/);

  const test = await api.post('/webhook/test', {});
  const testEvent = await printed((l) => l.event === 'webhook.test');
  expect(testEvent).toMatchObject({ eventId: test.body.eventId, signature: 'verified', schema: 'valid' });

  const order = await api.post('/orders', { externalOrderId: 'listen-1', productId: 'prod_api_order_test', qty: 1 });
  expect(order.body.status).toBe('delivered');
  const delivered = await printed((l) => l.event === 'order.delivered');
  expect(delivered).toMatchObject({
    signature: 'verified',
    schema: 'valid',
    body: { orderId: order.body.orderId, externalOrderId: 'listen-1', qty: 1 },
  });
  // Codes are masked in what the listener prints.
  expect(delivered.body.codes).toHaveLength(1);
  expect(delivered.body.codes[0]).not.toBe(order.body.codes[0]);
  expect(delivered.body.codes[0]).toMatch(/^\w{4}\*+\w{4}$/);

  // A delivery not signed with the account's secret is refused and shown as such.
  const forged = await fetch(ready.listening, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-wholesale-signature': `sha256=${'0'.repeat(64)}` },
    body: JSON.stringify({ eventId: 'evt_forged', event: 'webhook.test', timestamp: 1, message: 'hi' }),
  });
  expect(forged.status).toBe(401);
  expect(await printed((l) => l.body?.eventId === 'evt_forged')).toMatchObject({ signature: 'INVALID' });

  listener.kill('SIGINT');
  const code = await new Promise<number | null>((r) => listener!.once('close', r));
  expect(stderr).toBe('');
  expect(code).toBe(0);
  expect(lines.at(-1)).toMatchObject({ stopped: ready.listening, unregistered: true });
  expect((await api.get('/webhook')).body.url).toBe('');
}, 120_000);

test('production refuses loopback webhook receivers: WEBHOOK_ALLOW_INSECURE_URLS is a configuration error there', () => {
  expect(() =>
    loadConfig({
      NODE_ENV: 'production',
      CURSOR_SECRET: 'a-real-cursor-secret',
      PAYMENT_CALLBACK_SECRET: 'a-real-callback-secret',
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    }),
  ).toThrow(/WEBHOOK_ALLOW_INSECURE_URLS: must not be on in production/);
});
