import { importStock } from '../../src/services/payments/admin';
import { createApiKey } from '../../src/services/accounts/accounts';
import { sandboxUpstreamOf, startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { buyCode, eventsOf, freshRateWindow, redemptionRowsOfCode, reseller, type Api } from '../helpers/redemption';

// The public redemption site behind redeemUrl (issue 7 item 6) over plain HTTP, and the limits of
// spec 8: 60 submissions per minute per key (here 3) and the site's own per-IP limit (here 3).
// Site requests name their client with X-Forwarded-For (the app trusts the loopback proxy), so each
// test has its own per-IP budget.
let h: Harness;
const sandbox = sandboxUpstreamOf(() => h);
let ipSeq = 10;

beforeAll(async () => {
  h = await startHarness({
    REDEMPTION_REFRESH_SECONDS: '1',
    REDEMPTION_RATE_LIMIT_PER_MINUTE: '3',
    SITE_RATE_LIMIT_PER_MINUTE: '3',
  });
});
afterAll(() => h?.stop());
beforeEach(() => sandbox.reset());

const TEAM = 'prod_chatgpt_team_1m';
const ORG = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

/** One end customer: a browser-like client with its own IP. */
function visitor() {
  const ip = `203.0.113.${ipSeq++}`;
  const send = async (path: string, form?: Record<string, string>) => {
    const res = await fetch(`${h.baseUrl}${path}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { 'x-forwarded-for': ip, ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  return {
    ip,
    get: (path: string) => send(path),
    post: (path: string, form: Record<string, string>) => send(path, form),
  };
}

async function expectUnused(api: Api, code: string) {
  expect((await api.get(`/redemptions?code=${code}`)).body).toMatchObject({
    status: 'not_redeemed',
    redemptionId: null,
  });
  expect(await redemptionRowsOfCode(h, code)).toEqual([]);
}

describe('the public redemption site', () => {
  test('the code form is served with headers that keep it unframed, uncached and script-restricted', async () => {
    const res = await visitor().get('/redeem');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toContain('<form method="post" action="/redeem" novalidate>');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  test("a code shows its product's fields with English labels where present, the original labels otherwise", async () => {
    const { api } = await reseller(h);
    const team = await buyCode(api, TEAM);
    const page = await visitor().post('/redeem', { code: team.code.toLowerCase() });
    expect(page.status).toBe(200);
    expect(page.text).toContain('ChatGPT Team seat, 1 month');
    expect(page.text).toContain('Organization id');
    expect(page.text).toContain('name="rf_account_id"');
    expect(page.text).toContain('name="rf_email" type="email"');
    expect(page.text).not.toContain('组织 ID');

    await importStock(h.services.orm.em.fork(), 'prod_spotify_premium_1m', ['SPTF-2345-6789-ABCD']);
    const spotify = await buyCode(api, 'prod_spotify_premium_1m');
    const zh = await visitor().post('/redeem', { code: spotify.code });
    expect(zh.text).toContain('邮箱');
  });

  test.each([
    ['an unknown code', 'ZZZZ-ZZZZ-ZZZZ-ZZZZ', 404, 'could not find this code'],
    [
      'markup typed as a code is shown escaped',
      '<script>alert(1)</script>',
      404,
      '&lt;script&gt;alert(1)&lt;/script&gt;',
    ],
  ])('%s', async (_name, code, status, shown) => {
    const res = await visitor().post('/redeem', { code });
    expect(res.status).toBe(status);
    expect(res.text).toContain(shown);
    expect(res.text).not.toContain('<script>alert(1)</script>');
  });

  test('a test-product code is 400 test_code_only, at the code step and at submission, and stays unused', async () => {
    const { api } = await reseller(h, '0.01');
    const { code } = await buyCode(api, 'prod_api_order_test');
    const v = visitor();
    const lookup = await v.post('/redeem', { code });
    expect(lookup.status).toBe(400);
    expect(lookup.text).toContain('integration test code');
    const submit = await v.post('/redeem/submit', { code });
    expect(submit.status).toBe(400);
    await expectUnused(api, code);
  });

  test('a required field left empty shows the error with the other values kept, and the code stays unused', async () => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, TEAM);
    const res = await visitor().post('/redeem/submit', { code, rf_account_id: ORG, rf_email: '' });
    expect(res.status).toBe(400);
    expect(res.text).toContain('Please fill in “Email”.');
    expect(res.text).toContain(`value="${ORG}"`);
    await expectUnused(api, code);
  });

  test('a submission redirects to a status page that reaches fulfilled; an API code emits the event; a second visit goes to the status', async () => {
    const { api, accountId } = await reseller(h);
    const { code } = await buyCode(api, TEAM);
    const v = visitor();
    const res = await v.post('/redeem/submit', { code, rf_account_id: ORG, rf_email: 'jane@example.com' });
    expect(res.status).toBe(303);
    const location = res.headers.get('location')!;
    expect(location).toMatch(/^\/redeem\/status\/rdm_/);
    const id = location.split('/').pop()!;

    const first = await v.get(location);
    expect(first.status).toBe(200);
    expect(first.text).toContain(`${code.slice(0, 4)}-****-****-${code.slice(-4)}`);
    expect(first.text).not.toContain(code);
    // A status other than fulfilled is thrown, so a timeout reports the last one seen. Polled every
    // 2 s as the page's script does: the poll budget here is 12 a minute (4 x the site limit of 3),
    // and faster polling ran it out on a loaded machine (CI saw a 429).
    const json = await eventually(
      async () => {
        const r = await v.get(`${location}/json`);
        const body = JSON.parse(r.text);
        if (body.status !== 'fulfilled') throw new Error(`last status ${r.status} ${r.text.slice(0, 300)}`);
        return body;
      },
      20_000,
      2000,
      'the redemption fulfilled',
    );
    expect(json).toEqual({
      redemptionId: id,
      status: 'fulfilled',
      retryable: false,
      failureCode: null,
      fulfilledAt: expect.any(Number),
    });
    const done = await v.get(location);
    expect(done.text).toContain('Fulfilled');
    expect(done.text).toContain('j***@example.com');

    // Same state machine as the API: the reseller sees it, and the redemption event was written.
    expect((await api.get(`/redemptions/${id}`)).body).toMatchObject({ status: 'fulfilled' });
    expect((await eventsOf(h, accountId)).map((e) => e.id)).toEqual([`redemption:${id}:1:redemption.fulfilled`]);
    const [row] = await h.services.orm.em
      .fork()
      .execute<{ source: string }[]>('select source from redemptions where id = ?', [id]);
    expect(row.source).toBe('site');

    const again = await v.post('/redeem', { code });
    expect([again.status, again.headers.get('location')]).toEqual([303, location]);
  });

  test('a failed redemption: the status page offers a retry, which waits while the supplier holds resources, then shows the form again', async () => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, TEAM);
    sandbox.enqueue(TEAM, { outcome: 'failed', holdPolls: 1_000_000 });
    const v = visitor();
    const location = (
      await v.post('/redeem/submit', { code, rf_account_id: ORG, rf_email: 'jane@example.com' })
    ).headers.get('location')!;
    const id = location.split('/').pop()!;
    await eventually(async () => (await api.get(`/redemptions/${id}`)).body.status === 'failed');
    const failedPage = await v.get(location);
    expect(failedPage.text).toContain('could not apply the code');
    expect(failedPage.text).toContain('Try again');

    const held = await v.post('/redeem', { code });
    expect(held.status).toBe(409);
    expect(held.text).toContain('still being released');

    sandbox.releaseHeldResources();
    await eventually(async () => {
      const [row] = await h.services.orm.em
        .fork()
        .execute<{ holds_resources: boolean }[]>(
          'select holds_resources from redemption_attempts where redemption_id = ?',
          [id],
        );
      return row.holds_resources === false;
    });
    const retry = await visitor().post('/redeem', { code });
    expect(retry.status).toBe(200);
    expect(retry.text).toContain('The previous attempt failed');
    expect(retry.text).toContain('name="rf_email"');
  });

  test('503 session_validation_unavailable is explained and the code stays unused', async () => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, 'prod_chatgpt_plus_1m');
    sandbox.setSessionCheck('down');
    const res = await visitor().post('/redeem/submit', {
      code,
      rf_session_user_id: '9b2a44d7-52b1-4c8e-9d61-3c0a5e1f7b20',
    });
    expect(res.status).toBe(503);
    expect(res.text).toContain('Your code was not used');
    await expectUnused(api, code);
  });

  test('an unknown status page is 404', async () => {
    expect((await visitor().get('/redeem/status/rdm_nope')).status).toBe(404);
    expect((await visitor().get('/redeem/status/rdm_nope/json')).status).toBe(404);
  });
});

describe('limits (spec 8)', () => {
  test('the site allows SITE_RATE_LIMIT_PER_MINUTE form posts per IP, then 429 with Retry-After; another IP is unaffected', async () => {
    await freshRateWindow();
    const v = visitor();
    for (let i = 0; i < 3; i++)
      expect((await v.post('/redeem', { code: `ZZZZ-ZZZZ-ZZZZ-ZZZ${i + 2}` })).status).toBe(404);
    const limited = await v.post('/redeem', { code: 'ZZZZ-ZZZZ-ZZZZ-ZZZ9' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.text).toContain('Too many attempts');
    expect((await visitor().post('/redeem', { code: 'ZZZZ-ZZZZ-ZZZZ-ZZZ9' })).status).toBe(404);
  });

  test('POST /redemptions allows REDEMPTION_RATE_LIMIT_PER_MINUTE per key, then 429 rate_limited with Retry-After; queries and other keys go on', async () => {
    await freshRateWindow();
    const { api, accountId } = await reseller(h);
    const { code } = await buyCode(api, TEAM);
    for (let i = 0; i < 3; i++) {
      const res = await api.post('/redemptions', {
        code,
        redeemInfo: { account_id: 'not-a-uuid', email: 'jane@example.com' },
      });
      expect(res.body.error).toBe('invalid_account_id');
      expect(res.headers.get('x-ratelimit-limit')).toBe('3');
    }
    const limited = await api.post('/redemptions', {
      code,
      redeemInfo: { account_id: ORG, email: 'jane@example.com' },
    });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: 'rate_limited', retryable: true });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);

    // Queries share the general limit only; a second key of the account has its own submission budget.
    expect((await api.get(`/redemptions?code=${code}`)).body.status).toBe('not_redeemed');
    const otherKey = client(h.apiUrl, await createApiKey(h.services.orm.em.fork(), accountId));
    expect(
      (await otherKey.post('/redemptions', { code, redeemInfo: { account_id: ORG, email: 'jane@example.com' } }))
        .status,
    ).toBe(200);
  });
});
