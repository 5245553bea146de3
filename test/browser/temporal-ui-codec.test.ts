import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer as createHttpsServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { startDevTemporal, type DevTemporal } from '../../src/dev/temporal';
import { ENCRYPTED_ENCODING } from '../../src/temporal/codec';
import { launchChromium } from '../helpers/browser';
import { freePort, reseller, startHarness, type Harness } from '../helpers/harness';

// The codec server as an operator uses it from the Temporal UI that ships in the `temporal` CLI
// (UI 2.42), in Chromium. That UI sends `Authorization: Bearer <access token>` to the codec
// endpoint only when "Pass the user access token" is on and the endpoint is https:// (else it
// sends nothing and shows the payloads as they are); with the UI's own sign-in off, the token is
// what the page's `window.AccessToken()` returns. So the codec server is reached here through a
// loopback TLS proxy (as behind a TLS load balancer) with a certificate made at run time, the
// operator's browser supplies CODEC_TOKEN that way, and the endpoint carries no token.
const CODEC_TOKEN = `codec-${randomBytes(12).toString('hex')}`;
/** How the UI prints the encoding of a payload it could not decode (the protocol's base64). */
const ENCRYPTED_B64 = Buffer.from(ENCRYPTED_ENCODING).toString('base64');

let temporal: DevTemporal;
let h: Harness;
let tls: { url: string; seen: Seen[]; server: Server };
let browser: Browser;
let certDir: string;

interface Seen {
  method: string;
  path: string;
  authorization?: string;
  status: number;
}

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'wholesale-codec-tls-'));
  const cert = selfSignedLoopbackCert(certDir);
  temporal = await startDevTemporal({ port: await freePort(), uiPort: await freePort(), namespace: 'default' });
  h = await startHarness({ TEMPORAL_ADDRESS: temporal.address, CODEC_TOKEN, TEMPORAL_UI_ORIGIN: temporal.uiUrl! });
  tls = await tlsProxy(h.baseUrl, cert);
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await new Promise((ok) => (tls?.server ? tls.server.close(ok) : ok(undefined)));
  await h?.stop();
  await temporal?.stop();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

/** A certificate for 127.0.0.1 made now (openssl), valid a day; Chromium is told to accept it. */
function selfSignedLoopbackCert(dir: string): { key: Buffer; cert: Buffer } {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (err) {
    throw new Error(
      `this test makes its TLS certificate with openssl (1.1.1 or later): ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  return { key: readFileSync(key), cert: readFileSync(cert) };
}

/** https:// on loopback in front of the service, passing every request through as it came; it records what reached the codec server. */
async function tlsProxy(target: string, cert: { key: Buffer; cert: Buffer }) {
  const seen: Seen[] = [];
  const server = createHttpsServer(cert, (req, res) => {
    const upstream = httpRequest(new URL(req.url!, target), { method: req.method, headers: req.headers }, (answer) => {
      seen.push({
        method: req.method!,
        path: req.url!,
        authorization: req.headers.authorization,
        status: answer.statusCode!,
      });
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  const port = await freePort();
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  return { url: `https://127.0.0.1:${port}`, seen, server };
}

/** A browser of an operator: with `token`, the page's access token is CODEC_TOKEN. */
async function operatorBrowser(token: string | undefined): Promise<BrowserContext> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 1000 } });
  if (token) await context.addInitScript((t) => Object.assign(window, { AccessToken: async () => t }), token);
  return context;
}

/** The operator's steps in the UI: Codec Server settings (stored in this browser), endpoint, "Pass the user access token". */
async function configureCodec(context: BrowserContext) {
  const page = await context.newPage();
  await page.goto(`${temporal.uiUrl}/namespaces/default/workflows`);
  await page.getByTestId('data-encoder-status').click();
  // The UI will not pass a token to a plain http:// endpoint (the service's own address here).
  await page.locator('#data-encoder-endpoint-input').fill(`${h.baseUrl}/codec`);
  await page.getByTestId('data-encoder-pass-access-token').click();
  await expect(page.locator('.error-msg').textContent()).resolves.toContain('must be https://');
  await expect(page.getByTestId('confirm-data-encoder-button').isDisabled()).resolves.toBe(true);
  await page.locator('#data-encoder-endpoint-input').fill(`${tls.url}/codec`);
  await page.getByTestId('confirm-data-encoder-button').click();
  await page.getByTestId('data-encoder-status-configured').waitFor();
  return page;
}

async function deliveredOrder(externalOrderId: string) {
  const { api, accountId } = await reseller(h, '1.00');
  const placed = await api.post('/orders', { externalOrderId, productId: 'prod_api_order_test', qty: 1 });
  expect(placed.body.status).toBe('delivered');
  return { orderId: placed.body.orderId as string, workflowId: `order:${accountId}:${externalOrderId}` };
}

const workflowPage = (workflowId: string) =>
  `${temporal.uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`;

test("with CODEC_TOKEN as the page's access token, the UI decodes an order's input, result and history; the token goes in the Authorization header only", async () => {
  const { orderId, workflowId } = await deliveredOrder('ui-decoded');
  const context = await operatorBrowser(CODEC_TOKEN);
  tls.seen.length = 0;
  const page = await configureCodec(context);
  await page.goto(workflowPage(workflowId));

  // The workflow's result and its update's outcome name the order id, which only the decoded payloads hold.
  await page.getByText(orderId).first().waitFor();
  await page.getByTestId('data-encoder-status-success').waitFor();
  const text = await page.locator('body').innerText();
  expect(text).toContain(`"orderId": "${orderId}"`);
  expect(text).toContain('"status": "delivered"');
  expect(text).toContain('"placementRecoverySeconds"'); // the workflow's input
  expect(text).not.toContain(ENCRYPTED_B64);
  await page.screenshot({ path: '/tmp/wholesale-temporal-ui-decoded.png', fullPage: true });

  // Every call was a decode bearing the token in its header (the UI encodes nothing to show a
  // history); the browser's preflight carried none and was let through; no URL held the token.
  const posts = tls.seen.filter((r) => r.method === 'POST').map((r) => [r.path, r.authorization, r.status]);
  expect(posts.length).toBeGreaterThan(0);
  expect(posts).toEqual(posts.map(() => ['/codec/decode', `Bearer ${CODEC_TOKEN}`, 200]));
  expect(tls.seen.filter((r) => r.method === 'OPTIONS').map((r) => [r.path, r.authorization, r.status])).toContainEqual(
    ['/codec/decode', undefined, 204],
  );
  expect(tls.seen.filter((r) => r.path.includes(CODEC_TOKEN))).toEqual([]);
  await context.close();
});

test('without the token the same UI gets 401 and shows the payloads encrypted', async () => {
  const { orderId, workflowId } = await deliveredOrder('ui-encrypted');
  const context = await operatorBrowser(undefined);
  tls.seen.length = 0;
  const page = await configureCodec(context);
  await page.goto(workflowPage(workflowId));

  await page.getByTestId('data-encoder-status-error').waitFor();
  // The input and result panels show the payloads as stored: their encoding, key id and ciphertext.
  await page.getByText(`"encoding": "${ENCRYPTED_B64}"`).nth(1).waitFor();
  const text = await page.locator('body').innerText();
  expect(text).toContain('Codec Server could not connect');
  expect(text).not.toContain(orderId);
  expect(text).not.toContain('placementRecoverySeconds');
  await page.screenshot({ path: '/tmp/wholesale-temporal-ui-encrypted.png', fullPage: true });

  const posts = tls.seen.filter((r) => r.method === 'POST').map((r) => [r.path, r.status]);
  expect(posts.length).toBeGreaterThan(0);
  expect(posts).toEqual(posts.map(() => ['/codec/decode', 401]));
  await context.close();
});
