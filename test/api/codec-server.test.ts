import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import {
  dataConverter,
  EncryptionCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  parseKeyRing,
} from '../../src/temporal/codec';
import { startHarness, type Harness } from '../helpers/harness';
import { encodingOf, payloadsOf, rawHistory } from '../helpers/history';
import { reseller } from '../helpers/payments';

// Issue 12: the codec server of Temporal's remote codec protocol over real HTTP. The token
// travels only in `Authorization: Bearer` (ADMIN_TOKEN or CODEC_TOKEN decode, 401 otherwise; only
// ADMIN_TOKEN encodes a payload); a token in the path is no route (404); the token is checked before the body
// is read; CORS for the configured UI origin only; a payload encrypted under a rotated-out key,
// plain payloads of old histories passing through, and the real `temporal` CLI reading a history
// through it. The harness runs on a rotated key ring: `new` encrypts, `old` still decrypts.
// The Temporal UI itself decoding through it: test/browser/temporal-ui-codec.test.ts.
const root = resolve(__dirname, '..', '..');
const run = promisify(execFile);

const OLD = `old:${randomBytes(32).toString('base64')}`;
const NEW = `new:${randomBytes(32).toString('base64')}`;
const ADMIN_TOKEN = `admin-${randomBytes(12).toString('hex')}`;
const CODEC_TOKEN = `codec-${randomBytes(12).toString('hex')}`;
const UI_ORIGIN = 'http://127.0.0.1:18233';

let h: Harness;
let codecUrl: string;

beforeAll(async () => {
  h = await startHarness({
    TEMPORAL_PAYLOAD_KEYS: `${NEW},${OLD}`,
    ADMIN_TOKEN,
    CODEC_TOKEN,
    TEMPORAL_UI_ORIGIN: UI_ORIGIN,
  });
  codecUrl = `${h.baseUrl}/codec`;
});
afterAll(() => h?.stop());

// The remote codec protocol's JSON: bytes as base64.
type JsonPayload = { metadata: Record<string, string>; data: string };
const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v ?? new Uint8Array())])),
  data: b64(p.data ?? new Uint8Array()),
});
const jsonPlain = (value: unknown): JsonPayload => ({
  metadata: { encoding: b64('json/plain') },
  data: b64(JSON.stringify(value)),
});
const valueOf = (p: JsonPayload) => JSON.parse(Buffer.from(p.data, 'base64').toString('utf8'));
const metaOf = (p: JsonPayload, key: string) =>
  p.metadata[key] ? Buffer.from(p.metadata[key], 'base64').toString('utf8') : undefined;

/** A payload as a client with only `keys` would send it to the Temporal server. */
async function sealedWith(keys: string, value: unknown): Promise<JsonPayload> {
  const [sealed] = await new EncryptionCodec(parseKeyRing(keys)).encode([
    { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(value)) },
  ]);
  return toJson(sealed);
}

async function codec(path: string, payloads: JsonPayload[], headers: Record<string, string> = {}) {
  const res = await fetch(`${codecUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
    body: JSON.stringify({ payloads }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('authorisation', () => {
  test.each([
    ['no Authorization header', {}],
    ['a wrong token', bearer('codec-not-the-right-token-at-all')],
    ['a Basic scheme with the right token', { authorization: `Basic ${CODEC_TOKEN}` }],
  ])('/codec/decode with %s is 401 with the spec error body and decodes nothing', async (_name, headers) => {
    const sealed = await sealedWith(NEW, { secret: 'never shown' });
    const res = await codec('/decode', [sealed], headers);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: 'unauthorized',
      message: expect.any(String),
      requestId: res.headers.get('x-request-id'),
      retryable: false,
    });
    expect(JSON.stringify(res.body)).not.toContain('never shown');
  });

  test.each([
    ['ADMIN_TOKEN', ADMIN_TOKEN],
    ['CODEC_TOKEN', CODEC_TOKEN],
  ])('with %s as Bearer, /decode answers 200 with the decoded payload', async (_name, token) => {
    const res = await codec('/decode', [await sealedWith(NEW, { orderId: 'ord_decoded_1' })], bearer(token));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body.payloads).toHaveLength(1);
    expect(metaOf(res.body.payloads[0], 'encoding')).toBe('json/plain');
    expect(valueOf(res.body.payloads[0])).toEqual({ orderId: 'ord_decoded_1' });
  });

  test('a token in the path is no route: /codec/<token>/decode and /encode are 404 with the spec error body, with or without the header', async () => {
    const sealed = await sealedWith(NEW, { secret: 'not through the path' });
    for (const token of [CODEC_TOKEN, ADMIN_TOKEN, 'codec-not-the-right-token-at-all']) {
      for (const action of ['decode', 'encode']) {
        for (const headers of [{}, bearer(CODEC_TOKEN), bearer(ADMIN_TOKEN)]) {
          const res = await codec(`/${token}/${action}`, [sealed], headers);
          expect(res.status).toBe(404);
          expect(res.body).toEqual({
            error: 'not_found',
            message: expect.any(String),
            requestId: res.headers.get('x-request-id'),
            retryable: false,
          });
          expect(JSON.stringify(res.body)).not.toContain('not through the path');
          // The refusal does not echo the token it was given.
          expect(JSON.stringify(res.body)).not.toContain(token);
        }
      }
    }
  });

  test('CODEC_TOKEN only decodes: /encode of a payload with it (or none) is 401 and seals nothing; ADMIN_TOKEN encodes', async () => {
    for (const headers of [bearer(CODEC_TOKEN), {}]) {
      const refused = await codec('/encode', [jsonPlain({ forged: 'paid' })], headers);
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({
        error: 'unauthorized',
        message: expect.any(String),
        requestId: refused.headers.get('x-request-id'),
        retryable: false,
      });
      expect(refused.body.payloads).toBeUndefined();
    }
    const encoded = await codec('/encode', [jsonPlain({ forged: 'paid' })], bearer(ADMIN_TOKEN));
    expect(encoded.status).toBe(200);
    expect(metaOf(encoded.body.payloads[0], 'encoding')).toBe(ENCRYPTED_ENCODING);
    // An empty list seals nothing: the CLI's `workflow query` asks for it with CODEC_TOKEN (below).
    const empty = await fetch(`${codecUrl}/encode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(CODEC_TOKEN) },
      body: '{}',
    });
    expect([empty.status, await empty.json()]).toEqual([200, { payloads: [] }]);
  });

  test('the token is checked before the body is read: an unauthenticated 8 MB body is refused with 401 before it is sent, never parsed, and the service stays up', async () => {
    const size = 8 << 20;
    // Only the first 64 kB of a declared 8 MB is sent: the answer comes before the body could be read.
    const early = await new Promise<{ status: number; body: any }>((ok, fail) => {
      const req = request(
        `${codecUrl}/decode`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(size) } },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => {
            ok({ status: res.statusCode!, body: JSON.parse(text) });
            req.destroy();
          });
        },
      );
      req.on('error', fail);
      req.write(Buffer.alloc(64 << 10, '['));
    });
    expect(early).toEqual({ status: 401, body: expect.objectContaining({ error: 'unauthorized' }) });

    // The whole 8 MB, not JSON at all, with no token or a wrong one, on either route: 401 (a parsed body would be 400).
    const junk = Buffer.alloc(size, '{');
    for (const path of ['/decode', '/encode']) {
      for (const headers of [{}, bearer('codec-not-the-right-token-at-all')]) {
        const res = await fetch(`${codecUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: junk,
        });
        expect([path, res.status, (await res.json()).error]).toEqual([path, 401, 'unauthorized']);
      }
    }
    // The same body with the token is parsed, and refused as a bad body (4xx, never a 5xx).
    const parsed = await fetch(`${codecUrl}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(CODEC_TOKEN) },
      body: junk,
    });
    expect(parsed.status).toBe(400);
    await parsed.body?.cancel();

    const after = await codec('/decode', [await sealedWith(NEW, 'still serving')], bearer(CODEC_TOKEN));
    expect(after.status).toBe(200);
    expect(valueOf(after.body.payloads[0])).toBe('still serving');
  });

  test("a body that is not the protocol's shape is refused with a 4xx, not a 5xx", async () => {
    const res = await fetch(`${codecUrl}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(CODEC_TOKEN) },
      body: '{"payloads":"x"}',
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  test('with neither ADMIN_TOKEN nor CODEC_TOKEN the codec server is off (404)', async () => {
    const off = await startHarness({}, { worker: false });
    try {
      const res = await fetch(`${off.baseUrl}/codec/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"payloads":[]}',
      });
      expect(res.status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});

describe('CORS (only the configured Temporal UI origin)', () => {
  // A browser sends no token on a preflight: it is answered without one.
  const preflight = (origin: string) =>
    fetch(`${codecUrl}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-namespace',
      },
    });

  test("a preflight from TEMPORAL_UI_ORIGIN is allowed with the UI's headers, and the POST carries the allow-origin header", async () => {
    const res = await preflight(UI_ORIGIN);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
    expect(res.headers.get('access-control-allow-headers')?.split(/,\s*/)).toEqual(
      expect.arrayContaining(['content-type', 'x-namespace', 'authorization']),
    );
    expect(res.headers.get('vary')).toContain('Origin');
    const post = await codec('/decode', [await sealedWith(NEW, 1)], { origin: UI_ORIGIN, ...bearer(CODEC_TOKEN) });
    expect(post.status).toBe(200);
    expect(post.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
  });

  test.each(['http://evil.example', 'http://127.0.0.1:18234', 'null'])(
    'origin %s gets no allow headers',
    async (origin) => {
      const res = await preflight(origin);
      expect(res.status).not.toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-headers')).toBeNull();
      const post = await codec('/decode', [await sealedWith(NEW, 1)], { origin, ...bearer(CODEC_TOKEN) });
      expect(post.headers.get('access-control-allow-origin')).toBeNull();
    },
  );
});

describe('key rotation and old histories', () => {
  test('a payload encrypted under the rotated-out key decodes; /encode (ADMIN_TOKEN) uses the first key', async () => {
    const old = await sealedWith(OLD, { placed: 'before the rotation' });
    expect(metaOf(old, KEY_ID_METADATA)).toBe('old');
    const res = await codec('/decode', [old], bearer(CODEC_TOKEN));
    expect(res.status).toBe(200);
    expect(valueOf(res.body.payloads[0])).toEqual({ placed: 'before the rotation' });

    const encoded = await codec('/encode', [jsonPlain({ placed: 'after the rotation' })], bearer(ADMIN_TOKEN));
    expect(encoded.status).toBe(200);
    expect(metaOf(encoded.body.payloads[0], 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(metaOf(encoded.body.payloads[0], KEY_ID_METADATA)).toBe('new');
    // What /encode made opens with the new key alone, not with the old one alone.
    const [opened] = await new EncryptionCodec(parseKeyRing(NEW)).decode([
      {
        metadata: Object.fromEntries(
          Object.entries(encoded.body.payloads[0].metadata as Record<string, string>).map(([k, v]) => [
            k,
            Buffer.from(v, 'base64'),
          ]),
        ),
        data: Buffer.from(encoded.body.payloads[0].data, 'base64'),
      },
    ]);
    expect(JSON.parse(Buffer.from(opened.data!).toString('utf8'))).toEqual({ placed: 'after the rotation' });
  });

  test('a payload that is not encrypted (an old history, or a forged plain signal) passes through unchanged', async () => {
    const plain = [
      jsonPlain({ orderId: 'ord_before_encryption' }),
      { metadata: { encoding: b64('binary/null') }, data: '' },
    ];
    const res = await codec('/decode', plain, bearer(ADMIN_TOKEN));
    expect(res.status).toBe(200);
    expect(res.body.payloads).toEqual(plain);
    // Shown as plain, not as a payload some key failed to open.
    expect(res.headers.get('x-codec-unopened')).toBeNull();
  });

  test('a payload no configured key opens, or whose bytes were altered, is shown as it is (never an error page)', async () => {
    const foreign = await sealedWith(`gone:${randomBytes(32).toString('base64')}`, 'unreadable');
    const tampered = await sealedWith(NEW, 'tampered');
    const bytes = Buffer.from(tampered.data, 'base64');
    bytes[bytes.length - 1] ^= 1;
    tampered.data = bytes.toString('base64');
    const warn = jest.spyOn(h.services.logger, 'warn');
    const res = await codec('/decode', [foreign, tampered, await sealedWith(NEW, 'fine')], bearer(CODEC_TOKEN));
    expect(res.status).toBe(200);
    expect(res.body.payloads[0]).toEqual(foreign);
    expect(res.body.payloads[1]).toEqual(tampered);
    expect(valueOf(res.body.payloads[2])).toBe('fine');
    // The operator is told which key ids opened nothing (ids only, never payload bytes).
    const told = warn.mock.calls.find(
      ([, msg]) => typeof msg === 'string' && msg.startsWith('codec: no configured key opens'),
    );
    expect(told?.[0]).toMatchObject({ keyIds: ['gone', 'new'] });
    warn.mockRestore();
  });

  test('/encode then /decode round-trips a batch', async () => {
    const batch = [jsonPlain({ a: 1 }), jsonPlain('two'), jsonPlain([3, { four: null }])];
    const encoded = await codec('/encode', batch, bearer(ADMIN_TOKEN));
    expect(encoded.body.payloads.map((p: JsonPayload) => metaOf(p, 'encoding'))).toEqual([
      ENCRYPTED_ENCODING,
      ENCRYPTED_ENCODING,
      ENCRYPTED_ENCODING,
    ]);
    expect(JSON.stringify(encoded.body)).not.toContain(batch[1].data);
    const decoded = await codec('/decode', encoded.body.payloads, bearer(CODEC_TOKEN));
    expect(decoded.body.payloads).toEqual(batch);
  });
});

describe("the temporal CLI through the codec server (the runbook's command)", () => {
  let binary: string;
  const cli = async (args: string[], withCodec: boolean) => {
    binary ??= (await run(process.execPath, [join(root, 'scripts', 'ensure-temporal.mjs')])).stdout.trim();
    const codecArgs = withCodec ? ['--codec-endpoint', codecUrl, '--codec-auth', `Bearer ${CODEC_TOKEN}`] : [];
    const { stdout } = await run(
      binary,
      [
        ...args,
        ...codecArgs,
        '--address',
        h.config.TEMPORAL_ADDRESS!,
        '--namespace',
        h.config.TEMPORAL_NAMESPACE,
        '-o',
        'json',
      ],
      { maxBuffer: 16 << 20 },
    );
    return stdout;
  };
  const show = async (workflowId: string, withCodec: boolean) => {
    const stdout = await cli(['workflow', 'show', '-w', workflowId], withCodec);
    // The CLI prints payloads in the protocol's JSON (bytes as base64): read their encodings and data.
    const payloads = payloadsOf(JSON.parse(stdout), { except: ['searchAttributes'] }) as unknown as JsonPayload[];
    return {
      encodings: [...new Set(payloads.map((p) => metaOf(p, 'encoding')))].sort(),
      text: payloads.map((p) => Buffer.from(p.data ?? '', 'base64').toString('utf8')).join('\n'),
    };
  };

  test('an order placed on the rotated ring: `workflow show` decodes its placement with the codec flags, and shows ciphertext without', async () => {
    const { api, accountId } = await reseller(h, '1.00');
    const placed = await api.post('/orders', { externalOrderId: 'cli-1', productId: 'prod_api_order_test', qty: 1 });
    expect(placed.body.status).toBe('delivered');
    const workflowId = `order:${accountId}:cli-1`;
    // Written under the first key of the ring.
    const keyIds = new Set(
      payloadsOf(await rawHistory(h.services.temporal.client, workflowId), { except: ['searchAttributes'] })
        .filter((p) => encodingOf(p) === ENCRYPTED_ENCODING)
        .map((p) => Buffer.from(p.metadata![KEY_ID_METADATA]!).toString('utf8')),
    );
    expect([...keyIds]).toEqual(['new']);

    const decoded = await show(workflowId, true);
    expect(decoded.encodings).not.toContain(ENCRYPTED_ENCODING);
    expect(decoded.text).toContain(placed.body.orderId);
    expect(decoded.text).toContain('prod_api_order_test');
    const raw = await show(workflowId, false);
    // (the only plain payload left is the local-activity marker's own bookkeeping, see secrets-history.test.ts)
    expect(raw.encodings).toContain(ENCRYPTED_ENCODING);
    expect(raw.text).not.toContain(placed.body.orderId);
    expect(raw.text).not.toContain('prod_api_order_test');
  });

  test('`workflow query` works with CODEC_TOKEN (it asks /encode for an empty list of arguments) and answers decoded', async () => {
    const { api, accountId } = await reseller(h, '1.00');
    const placed = await api.post('/orders', {
      externalOrderId: 'cli-query',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    const answer = JSON.parse(
      await cli(['workflow', 'query', '-w', `order:${accountId}:cli-query`, '--type', 'state'], true),
    );
    expect(answer.queryResult).toEqual([
      expect.objectContaining({ orderId: placed.body.orderId, status: 'delivered' }),
    ]);
  });

  test('a history written before the rotation (old key only) is read through the codec server of the rotated ring', async () => {
    // A client of the service before the rotation: its ring held only `old`. Nobody polls this queue.
    const connection = await Connection.connect({ address: h.config.TEMPORAL_ADDRESS! });
    const before = new Client({
      connection,
      namespace: h.config.TEMPORAL_NAMESPACE,
      dataConverter: dataConverter(parseKeyRing(OLD)),
    });
    const marker = `written-under-old-${randomBytes(4).toString('hex')}`;
    const workflowId = `codec-rotation-${randomBytes(4).toString('hex')}`;
    const handle = await before.workflow.start('orderWorkflow', {
      workflowId,
      taskQueue: `nobody-${randomBytes(4).toString('hex')}`,
      args: [{ marker }],
    });
    try {
      const decoded = await show(workflowId, true);
      expect(decoded).toEqual({ encodings: ['json/plain'], text: JSON.stringify([{ marker }]).slice(1, -1) });
      const raw = await show(workflowId, false);
      expect(raw.encodings).toEqual([ENCRYPTED_ENCODING]);
      expect(raw.text).not.toContain(marker);
    } finally {
      await handle.terminate('test done');
      await connection.close();
    }
  });
});
