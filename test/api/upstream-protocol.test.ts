import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { ConfigError, DEV_SECRETS, loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { HttpRedemptionUpstream } from '../../src/providers/http-upstream';
import { UpstreamUnavailableError, type RedemptionUpstream } from '../../src/providers/redemption-upstream';
import { canonicalRequest, ERROR_CODES, PATHS, signature } from '../../src/providers/upstream-protocol';
import { sandboxUpstreamOf, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { REAL_PROVIDERS } from '../helpers/production';
import { attemptsOf, buyCode, redemptionReaches, reseller } from '../helpers/redemption';
import {
  DOC_FILE,
  documentedSignature,
  startFakePartner,
  startValidatingProxy,
  UpstreamContract,
  upstreamDoc,
  type PartnerAnswer,
} from '../helpers/upstream-protocol';

// Issue 26 item 3, the HTTP partner protocol (docs/redemption-upstream.md): its OpenAPI document
// validates; the service's adapter and its sandbox server, which speaks the protocol, are both held
// to that document on every exchange of real redemptions; the sandbox refuses what a partner must
// refuse (a wrong signature, a stale timestamp, a replayed nonce); every way a partner can fail
// is UpstreamUnavailableError, never a crash; and neither the secret nor the redeem details reach
// the log.

const root = resolve(__dirname, '..', '..');
const contract = new UpstreamContract();
const PLUS = 'prod_chatgpt_plus_1m';
const TEAM = 'prod_chatgpt_team_1m';
const USER_UUID = '9b2a44d7-52b1-4c8e-9d61-3c0a5e1f7b20';
const ORG = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const teamInfo = { account_id: ORG, email: 'jane@example.com' };

describe('the document (docs/redemption-upstream.openapi.json)', () => {
  test('two independent OpenAPI 3.1 validators (@seriousme/openapi-schema-validator, redocly lint) find no error and no warning', () => {
    const out = spawnSync(process.execPath, ['scripts/check-openapi.mjs', DOC_FILE], { cwd: root, encoding: 'utf8' });
    const report = JSON.parse(out.stdout.trim().split('\n').pop()!);
    expect({ seriousme: report.seriousme, redocly: report.redocly }).toEqual({ seriousme: [], redocly: [] });
    expect(out.status).toBe(0);
  }, 60_000);

  test('three operations, signed, with the error codes the service knows; the prose links it', () => {
    expect(contract.operations.map((o) => `${o.method} ${o.template} ${o.id}`).sort()).toEqual([
      'GET /v1/submissions/{ref} getSubmissionStatus',
      'POST /v1/sessions/check checkSession',
      'POST /v1/submissions submitRedemption',
    ]);
    expect([PATHS.sessionCheck, PATHS.submissions, PATHS.submission('a:b')]).toEqual([
      '/v1/sessions/check',
      '/v1/submissions',
      '/v1/submissions/a%3Ab',
    ]);
    for (const { op } of contract.operations) {
      expect(op.parameters.map((p: { $ref: string }) => p.$ref)).toEqual(
        expect.arrayContaining(['#/components/parameters/Timestamp', '#/components/parameters/Nonce']),
      );
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '5XX']));
    }
    expect(upstreamDoc.security).toEqual([{ upstreamSignature: [] }]);
    expect(upstreamDoc.components.schemas.Error.properties.error.enum).toEqual([...ERROR_CODES]);
    expect(upstreamDoc.components.schemas.FailureCode.enum).toEqual(['fulfillment_failed', 'rejected_by_operator']);
    const prose = readFileSync(resolve(root, 'docs', 'redemption-upstream.md'), 'utf8');
    expect(prose).toContain('(redemption-upstream.openapi.json)');
    for (const header of [
      'X-Upstream-Timestamp',
      'X-Upstream-Nonce',
      'X-Upstream-Signature',
      '300 seconds',
      'holdsResources',
    ])
      expect(prose).toContain(header);
  });

  test("the prose's signing example is what the service signs", () => {
    const example = {
      timestamp: '1764151200',
      nonce: 'q3Vb0aZ7lM2xT9sKpE4wYc1N',
      method: 'POST',
      path: '/v1/sessions/check',
      body: '{"productId":"prod_chatgpt_plus_1m","userId":"user-Xq81_abc"}',
    };
    const signed = signature('an-example-secret-of-at-least-32-characters', canonicalRequest(example));
    const prose = readFileSync(resolve(root, 'docs', 'redemption-upstream.md'), 'utf8');
    expect(prose).toContain(`X-Upstream-Signature: ${signed}`);
    expect(prose).toContain(`\`\`\`\n${Object.values(example).join('\n')}\n\`\`\``);
  });
});

describe('the service and its sandbox upstream, every exchange held to the document', () => {
  let h: Harness;
  const sandbox = sandboxUpstreamOf(() => h);
  let proxy: Awaited<ReturnType<typeof startValidatingProxy>>;
  const sandboxUrl = () => `${h.baseUrl}/sandbox-upstream`;

  beforeAll(async () => {
    // The service's upstream is pointed at a proxy in front of its own /sandbox-upstream.
    proxy = await startValidatingProxy(contract);
    h = await startHarness({ REDEMPTION_REFRESH_SECONDS: '1', REDEMPTION_UPSTREAM_URL: proxy.url });
    proxy.target = sandboxUrl();
  });
  afterAll(async () => {
    await h?.stop();
    await proxy?.close();
  });
  beforeEach(() => {
    sandbox.reset();
    proxy.exchanges.length = 0;
  });
  afterEach(() => {
    // Whatever the test did, nothing either side sent strayed from the document.
    expect(proxy.exchanges.flatMap((e) => e.problems.map((p) => `${e.method} ${e.path}: ${p}`))).toEqual([]);
  });

  const seen = (operationId: string) =>
    proxy.exchanges
      .filter((e) => e.operationId === operationId)
      .map((e) => ({ status: e.status, body: JSON.parse(e.responseBody) }));

  test('with REDEMPTION_UPSTREAM=sandbox the service calls the HTTP adapter, which reaches the sandbox over the protocol', () => {
    expect(h.config.REDEMPTION_UPSTREAM).toBe('sandbox');
    expect(h.services.providers.upstream).toBeInstanceOf(HttpRedemptionUpstream);
  });

  test('a session product: the pre-check (from inside an API request), the submission and its status polls', async () => {
    sandbox.script(PLUS, { polls: 1 });
    const { api } = await reseller(h, '200.00');
    const { code } = await buyCode(api, PLUS);
    const res = await api.post('/redemptions', { code, redeemInfo: { session_user_id: USER_UUID } });
    expect(res.status).toBe(200);
    const id = res.body.redemptionId;
    await redemptionReaches(api, id, 'fulfilled');

    expect(seen('checkSession')).toEqual([{ status: 200, body: { verdict: 'valid' } }]);
    const submits = proxy.exchanges.filter((e) => e.operationId === 'submitRedemption');
    expect(submits.map((e) => JSON.parse(e.requestBody))).toEqual([
      {
        key: `${id}:1`,
        productId: PLUS,
        productName: 'ChatGPT Plus, 1 month',
        redeemInfo: { session_user_id: USER_UUID },
        manual: false,
      },
    ]);
    expect(seen('submitRedemption')).toEqual([{ status: 200, body: { ref: `sbx:${id}:1` } }]);
    expect(seen('getSubmissionStatus').map((s) => s.body.state)).toEqual(['processing', 'fulfilled']);
    expect((await attemptsOf(h, id))[0]).toMatchObject({ status: 'fulfilled', upstream_ref: `sbx:${id}:1` });
  });

  test.each<[string, 'reject' | 'down', number, string, { status: number; body: unknown }]>([
    ['invalid', 'reject', 400, 'invalid_session_json', { status: 200, body: { verdict: 'invalid' } }],
    [
      'unavailable (503)',
      'down',
      503,
      'session_validation_unavailable',
      { status: 503, body: { error: 'unavailable', message: expect.any(String) } },
    ],
  ])(
    'a pre-check answered %s refuses the submission and leaves the code unused',
    async (_name, check, status, error, answer) => {
      sandbox.setSessionCheck(check);
      const { api } = await reseller(h, '200.00');
      const { code } = await buyCode(api, PLUS);
      const res = await api.post('/redemptions', { code, redeemInfo: { session_user_id: USER_UUID } });
      expect([res.status, res.body.error]).toEqual([status, error]);
      expect(seen('checkSession')).toEqual([answer]);
      expect(seen('submitRedemption')).toEqual([]);
      expect((await api.get(`/redemptions?code=${code}`)).body).toMatchObject({ status: 'not_redeemed' });
    },
  );

  test('a failure that holds resources is polled until released; then the code can be redeemed again', async () => {
    sandbox.enqueue(TEAM, { outcome: 'failed', holdPolls: 1_000_000 }, { outcome: 'fulfilled' });
    const { api } = await reseller(h, '200.00');
    const { code } = await buyCode(api, TEAM);
    const first = await api.post('/redemptions', { code, redeemInfo: teamInfo });
    const id = first.body.redemptionId;
    await redemptionReaches(api, id, 'failed');
    expect(seen('getSubmissionStatus')[0]).toEqual({
      status: 200,
      body: { state: 'failed', failureCode: 'fulfillment_failed', holdsResources: true },
    });
    expect((await api.post('/redemptions', { code, redeemInfo: teamInfo })).body.error).toBe('retry_conflict');

    sandbox.releaseHeldResources();
    await eventually(async () => (await attemptsOf(h, id))[0].holds_resources === false);
    expect(seen('getSubmissionStatus').at(-1)).toEqual({
      status: 200,
      body: { state: 'failed', failureCode: 'fulfillment_failed', holdsResources: false },
    });
    expect((await api.post('/redemptions', { code, redeemInfo: teamInfo })).status).toBe(200);
    await redemptionReaches(api, id, 'fulfilled');
  });

  describe('the sandbox server refuses what a partner must refuse (docs/redemption-upstream.md, Signing)', () => {
    const secret = () => h.config.redemptionUpstreamSecret;
    const nonce = () => randomBytes(12).toString('hex');
    const submission = (key = `rdm_test_${randomBytes(4).toString('hex')}:1`) =>
      JSON.stringify({
        key,
        productId: TEAM,
        productName: 'ChatGPT Team seat, 1 month',
        redeemInfo: teamInfo,
        manual: false,
      });

    /** A request signed as the prose says (with the test's own HMAC), then changed as `tamper` says. */
    async function send(o: {
      method?: 'GET' | 'POST';
      path?: string;
      body?: string;
      secret?: string;
      skewSeconds?: number;
      nonce?: string;
      tamper?: { path?: string; body?: string; unsigned?: boolean };
    }) {
      const method = o.method ?? 'POST';
      const path = o.path ?? PATHS.submissions;
      const body = o.body ?? (method === 'POST' ? submission() : '');
      const timestamp = String(Math.floor(Date.now() / 1000) + (o.skewSeconds ?? 0));
      const n = o.nonce ?? nonce();
      const headers: Record<string, string> = o.tamper?.unsigned
        ? {}
        : {
            'x-upstream-timestamp': timestamp,
            'x-upstream-nonce': n,
            'x-upstream-signature': documentedSignature(o.secret ?? secret(), {
              timestamp,
              nonce: n,
              method,
              path,
              body,
            }),
          };
      const sentPath = o.tamper?.path ?? path;
      const sentBody = o.tamper?.body ?? body;
      const res = await fetch(`${sandboxUrl()}${sentPath}`, {
        method,
        headers: { ...headers, 'content-type': 'application/json' },
        body: sentBody || undefined,
      });
      const text = await res.text();
      const op = contract.operationOf(method, sentPath)!;
      expect(contract.response(op, res.status, res.headers.get('content-type') ?? undefined, text)).toEqual([]);
      return { status: res.status, body: JSON.parse(text) };
    }

    test.each<[string, string, Parameters<typeof send>[0]]>([
      [
        'a signature made with another secret',
        'invalid_signature',
        { secret: 'another-secret-of-at-least-32-characters' },
      ],
      ['a body changed after signing', 'invalid_signature', { tamper: { body: submission('rdm_tampered:1') } }],
      [
        'a path changed after signing',
        'invalid_signature',
        { method: 'GET', path: PATHS.submission('sbx:a:1'), tamper: { path: PATHS.submission('sbx:b:1') } },
      ],
      ['no signature headers', 'invalid_signature', { tamper: { unsigned: true } }],
      ['a timestamp 301 s old', 'stale_timestamp', { skewSeconds: -301 }],
      ['a timestamp 301 s ahead', 'stale_timestamp', { skewSeconds: 301 }],
    ])('%s is 401 %s, and nothing is submitted', async (_name, error, request) => {
      const before = sandbox.submissions.length;
      expect(await send(request)).toEqual({ status: 401, body: { error, message: expect.any(String) } });
      expect(sandbox.submissions).toHaveLength(before);
    });

    test('a replayed request (the same nonce) is 401 replayed_request; a retry with a fresh nonce gets the same ref (submit is idempotent by key)', async () => {
      const key = `rdm_replay_${randomBytes(4).toString('hex')}:1`;
      const body = submission(key);
      const n = nonce();
      const first = await send({ body, nonce: n });
      expect(first).toEqual({ status: 200, body: { ref: `sbx:${key}` } });
      expect(await send({ body, nonce: n })).toEqual({
        status: 401,
        body: { error: 'replayed_request', message: expect.any(String) },
      });
      expect(await send({ body })).toEqual(first);
      expect(sandbox.submissions.filter((s) => s.key === key)).toHaveLength(1);
      expect(await send({ method: 'GET', path: PATHS.submission(first.body.ref) })).toEqual({
        status: 200,
        body: { state: 'fulfilled', deliverable: `ChatGPT Team seat, 1 month activated for ${ORG}.` },
      });
    });

    test('a signed body outside the document is 400 invalid_request', async () => {
      const { manual: _manual, ...incomplete } = JSON.parse(submission());
      expect(await send({ body: JSON.stringify(incomplete) })).toEqual({
        status: 400,
        body: { error: 'invalid_request', message: expect.any(String) },
      });
      expect(await send({ path: PATHS.sessionCheck, body: '{"productId":"p","userId":' })).toEqual({
        status: 400,
        body: { error: 'invalid_request', message: expect.any(String) },
      });
    });
  });
});

describe('the adapter against a scripted partner: anything but a valid answer is UpstreamUnavailableError', () => {
  const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
  const PASSWORD = 'Tr0ub4dor&3-secret';
  const SUBMISSION = {
    key: 'rdm_adapter:1',
    productId: TEAM,
    productName: 'ChatGPT Team seat, 1 month',
    redeemInfo: { email: 'jane@example.com', password: PASSWORD },
    manual: false,
  };
  let partner: Awaited<ReturnType<typeof startFakePartner>>;
  let lines: string[];

  const adapter = (baseUrl = partner.url, timeoutMs = 300): RedemptionUpstream => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    return new HttpRedemptionUpstream({ baseUrl, secret: SECRET, timeoutMs }, createLogger('trace', sink));
  };

  beforeAll(async () => {
    partner = await startFakePartner(SECRET, contract);
  });
  afterAll(() => partner?.close());
  beforeEach(() => {
    lines = [];
    partner.answers.length = 0;
    partner.requests.length = 0;
  });
  afterEach(() => {
    // Neither the secret, the signatures, nor what the customer submitted reaches the log.
    const log = lines.join('');
    for (const secret of [
      SECRET,
      PASSWORD,
      'jane@example.com',
      USER_UUID,
      ...partner.requests.map((r) => r.headers['x-upstream-signature'] ?? '-'),
    ]) {
      expect(log).not.toContain(secret);
    }
    // Every request the adapter made is the document's, signed as the prose says.
    expect(partner.requests.flatMap((r) => r.problems)).toEqual([]);
    expect(partner.requests.every((r) => r.signatureValid)).toBe(true);
  });

  const calls: [string, (u: RedemptionUpstream) => Promise<unknown>][] = [
    ['validateSession', (u) => u.validateSession({ productId: PLUS, userId: USER_UUID })],
    ['submit', (u) => u.submit(SUBMISSION)],
    ['status', (u) => u.status('sub_fake_1')],
  ];
  const error = (code: string, message = 'x') => JSON.stringify({ error: code, message });
  // A careless partner echoes what it was sent: none of it may reach our log or error.
  const echo = `you sent ${PASSWORD} for jane@example.com / ${USER_UUID}`;
  const faults: [string, PartnerAnswer][] = [
    ['a 500', { kind: 'status', status: 500, body: error('unavailable', echo) }],
    ['a 503', { kind: 'status', status: 503, body: error('unavailable') }],
    [
      'a 502 HTML page from a proxy',
      { kind: 'status', status: 502, body: `<html>${echo}</html>`, contentType: 'text/html' },
    ],
    ['no answer within the timeout', { kind: 'slow', ms: 1500 }],
    ['a connection reset', { kind: 'reset' }],
    ['a 200 that is not JSON', { kind: 'status', status: 200, body: `<html>${echo}</html>`, contentType: 'text/html' }],
    [
      'a 200 outside the protocol',
      {
        kind: 'status',
        status: 200,
        body: JSON.stringify({ state: 'done', verdict: 'maybe', ref: `has spaces ${PASSWORD}` }),
      },
    ],
    ['a 401 (the secrets differ)', { kind: 'status', status: 401, body: error('invalid_signature', echo) }],
    ['a 404', { kind: 'status', status: 404, body: error('unknown_ref') }],
  ];

  test.each(calls.flatMap(([name, call]) => faults.map(([fault, answer]) => [name, fault, call, answer] as const)))(
    '%s: %s',
    async (_name, _fault, call, answer) => {
      partner.answers.push(answer);
      const err = await call(adapter()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UpstreamUnavailableError);
      for (const secret of [SECRET, PASSWORD, 'jane@example.com', USER_UUID])
        expect((err as Error).message).not.toContain(secret);
      expect(lines.join('')).toMatch(/redemption upstream/);
    },
  );

  test('a partner that is not listening: UpstreamUnavailableError', async () => {
    const closed = await startFakePartner(SECRET);
    await closed.close();
    for (const [, call] of calls)
      await expect(call(adapter(closed.url))).rejects.toBeInstanceOf(UpstreamUnavailableError);
  });

  test('valid answers map onto the port; each request is signed relative to the base URL with a fresh nonce, the ref percent-encoded', async () => {
    const u = adapter();
    partner.answers.push(
      { kind: 'ok' },
      { kind: 'ok' },
      { kind: 'status', status: 200, body: JSON.stringify({ state: 'processing', extra: 'ignored' }) },
      { kind: 'status', status: 200, body: JSON.stringify({ state: 'fulfilled', deliverable: 'Seat added.' }) },
      { kind: 'status', status: 200, body: JSON.stringify({ verdict: 'invalid' }) },
    );
    expect(await u.validateSession({ productId: PLUS, userId: USER_UUID })).toBe('valid');
    expect(await u.submit(SUBMISSION)).toEqual({ ref: 'sub_fake_1' });
    expect(await u.status('sub:with/slash')).toEqual({ state: 'processing' });
    expect(await u.status('sub_fake_1')).toEqual({ state: 'fulfilled', deliverable: 'Seat added.' });
    expect(await u.validateSession({ productId: PLUS, userId: USER_UUID })).toBe('invalid');
    expect(partner.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/sessions/check',
      'POST /v1/submissions',
      'GET /v1/submissions/sub%3Awith%2Fslash',
      'GET /v1/submissions/sub_fake_1',
      'POST /v1/sessions/check',
    ]);
    expect(JSON.parse(partner.requests[1].body)).toEqual(SUBMISSION);
    expect(new Set(partner.requests.map((r) => r.headers['x-upstream-nonce'])).size).toBe(5);
    for (const r of partner.requests)
      expect(Math.abs(Number(r.headers['x-upstream-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
  });
});

describe('configuration (README, REDEMPTION_UPSTREAM=http)', () => {
  const SECRET = 'a-partner-secret-that-is-long-enough-1234';
  const http = {
    REDEMPTION_UPSTREAM: 'http',
    REDEMPTION_UPSTREAM_URL: 'https://upstream.partner.example/wholesale',
    REDEMPTION_UPSTREAM_SECRET: SECRET,
  };
  const production = {
    ...REAL_PROVIDERS,
    NODE_ENV: 'production',
    CURSOR_SECRET: 'a-real-cursor-secret',
    TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
  };
  const problem = (env: Record<string, string | undefined>) => {
    try {
      loadConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).not.toContain(SECRET);
      return (err as Error).message;
    }
    throw new Error('expected a ConfigError');
  };

  test.each<[string, Record<string, string | undefined>, RegExp]>([
    [
      'http without a URL or a secret',
      { REDEMPTION_UPSTREAM: 'http' },
      /REDEMPTION_UPSTREAM_URL: required with REDEMPTION_UPSTREAM=http[\s\S]*REDEMPTION_UPSTREAM_SECRET: required with REDEMPTION_UPSTREAM=http/,
    ],
    [
      'a secret under 32 characters',
      { ...http, REDEMPTION_UPSTREAM_SECRET: 'short-secret' },
      /REDEMPTION_UPSTREAM_SECRET: must be at least 32 characters/,
    ],
    [
      'a plain-http partner elsewhere than loopback',
      { ...http, REDEMPTION_UPSTREAM_URL: 'http://upstream.partner.example' },
      /REDEMPTION_UPSTREAM_URL: must be https:\/\/ \(plain http only on loopback/,
    ],
    [
      'a URL with credentials',
      { ...http, REDEMPTION_UPSTREAM_URL: 'https://u:p@upstream.partner.example' },
      /REDEMPTION_UPSTREAM_URL: a base URL without query, fragment or credentials/,
    ],
    [
      "a timeout above the activities' deadline",
      { ...http, REDEMPTION_UPSTREAM_TIMEOUT_MS: '30000' },
      /REDEMPTION_UPSTREAM_TIMEOUT_MS/,
    ],
    [
      'production on plain http, even on loopback',
      { ...production, ...http, REDEMPTION_UPSTREAM_URL: 'http://127.0.0.1:9000' },
      /REDEMPTION_UPSTREAM_URL: must be https:\/\/$/m,
    ],
    [
      'production with the built-in sandbox secret',
      { ...production, ...http, REDEMPTION_UPSTREAM_SECRET: DEV_SECRETS.REDEMPTION_UPSTREAM_SECRET },
      /REDEMPTION_UPSTREAM_SECRET: the built-in development value/,
    ],
    [
      'production with the sandbox, which names http as an alternative',
      { ...production, REDEMPTION_UPSTREAM: 'sandbox' },
      /REDEMPTION_UPSTREAM: the sandbox must not run in production .* or http/,
    ],
  ])('%s is refused, naming the variable', (_name, env, message) => {
    expect(problem(env)).toMatch(message);
  });

  test('production takes an https partner; development a loopback one; the sandbox is served by the service itself', () => {
    const prod = loadConfig({ ...production, ...http });
    expect(prod).toMatchObject({
      redemptionUpstreamUrl: 'https://upstream.partner.example/wholesale',
      redemptionUpstreamSecret: SECRET,
      REDEMPTION_UPSTREAM_TIMEOUT_MS: 10_000,
    });
    expect(prod.devSecrets).toEqual([]);
    expect(loadConfig({ ...http, REDEMPTION_UPSTREAM_URL: 'http://127.0.0.1:9000/' }).redemptionUpstreamUrl).toBe(
      'http://127.0.0.1:9000',
    );
    const dev = loadConfig({ PORT: '8123' });
    expect(dev).toMatchObject({
      REDEMPTION_UPSTREAM: 'sandbox',
      redemptionUpstreamUrl: 'http://127.0.0.1:8123/sandbox-upstream',
      redemptionUpstreamSecret: DEV_SECRETS.REDEMPTION_UPSTREAM_SECRET,
    });
    expect(dev.devSecrets).not.toContain('REDEMPTION_UPSTREAM_SECRET');
  });
});
