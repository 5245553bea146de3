import { demoCatalog, seedCatalog } from '../../src/db/seed';
import { generateCode } from '../../src/codes';
import { TEST_DELIVERABLE } from '../../src/services/redemptions/redemptions';
import { redemptionStateQuery, redemptionWorkflowId } from '../../src/contracts/redemptions-contract';
import { auditRows } from '../helpers/console';
import { sandboxUpstreamOf, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import {
  attemptsOf,
  buyCode,
  eventsOf,
  redemptionReaches,
  redemptionRowsOfCode,
  reseller,
  wholesale,
  type Api,
} from '../helpers/redemption';

// Server-side redemption (spec 4.4, 3.4, 2.3, 2.8, part 6 redemption events) over real HTTP on
// real Postgres and Temporal. The supplier is the in-process sandbox, scripted per test; the
// upstream refresh is 1 s so the real workflow runs in seconds.
let h: Harness;
const sandbox = sandboxUpstreamOf(() => h);

beforeAll(async () => {
  h = await startHarness({ REDEMPTION_REFRESH_SECONDS: '1' });
});
afterAll(() => h?.stop());
beforeEach(() => sandbox.reset());

const PLUS = 'prod_chatgpt_plus_1m';
const TEAM = 'prod_chatgpt_team_1m';
const TELEGRAM = 'prod_telegram_premium_3m';
const ORG = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const USER_UUID = '9b2a44d7-52b1-4c8e-9d61-3c0a5e1f7b20';
const sessionJson = (userId: string, status = 'authenticated') =>
  JSON.stringify({
    status,
    accessToken: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln',
    session: { userId },
    user: { email: 'jane@example.com' },
  });
const teamInfo = { account_id: ORG, email: 'jane@example.com' };

async function expectUnused(api: Api, code: string) {
  const res = await api.get(`/redemptions?code=${encodeURIComponent(code)}`);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'not_redeemed', redemptionId: null });
  expect(await redemptionRowsOfCode(h, code)).toEqual([]);
}

describe('POST /redemptions validates redeemInfo before the code is touched (spec 2.3, 4.4)', () => {
  test.each<[string, string, unknown, string]>([
    ['a required field left empty is missing_field', TEAM, { account_id: ORG, email: '' }, 'missing_field'],
    ['a required field left out is missing_field', TEAM, { account_id: ORG }, 'missing_field'],
    [
      'an organization id that is not a UUID is invalid_account_id',
      TEAM,
      { account_id: 'org-42', email: 'jane@example.com' },
      'invalid_account_id',
    ],
    [
      'a session field that is neither a UUID nor session JSON is invalid_session_json',
      PLUS,
      { session_user_id: 'user-42' },
      'invalid_session_json',
    ],
    [
      'a session JSON that is not authenticated is invalid_session_json',
      PLUS,
      { session_user_id: sessionJson('user-42', 'expired') },
      'invalid_session_json',
    ],
    [
      'a session JSON without session.userId is invalid_session_json',
      PLUS,
      { session_user_id: '{"status":"authenticated","user":{}}' },
      'invalid_session_json',
    ],
    [
      'a malformed Telegram username is invalid_telegram_username',
      TELEGRAM,
      { telegram_username: '@ab' },
      'invalid_telegram_username',
    ],
    ['an unknown key is invalid_input', TEAM, { ...teamInfo, coupon: 'FREE' }, 'invalid_input'],
    ['a non-string value is invalid_input', TEAM, { account_id: ORG, email: 42 }, 'invalid_input'],
    ['redeemInfo that is not an object is invalid_input', TEAM, ['x'], 'invalid_input'],
  ])('%s, and the code stays not_redeemed', async (_name, productId, redeemInfo, error) => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, productId);
    const res = await api.post('/redemptions', { code, redeemInfo });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error, requestId: expect.any(String), retryable: false });
    await expectUnused(api, code);
  });

  test.each<[string, unknown]>([
    ['no code', { redeemInfo: {} }],
    ['an empty code', { code: '', redeemInfo: {} }],
    ['a code over 64 characters', { code: 'A'.repeat(65) }],
    ['an unknown body field', { code: 'ABCD-EFGH-JKMN-PQRS', extra: true }],
  ])('a body with %s is 400 invalid_input', async (_name, body) => {
    const { api } = await reseller(h);
    const res = await api.post('/redemptions', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_input');
  });
});

describe('404 invalid_code without saying which (spec 4.4, 5 rule 5)', () => {
  test("unknown, malformed, voided, gift-card and other accounts' codes are all the same invalid_code, on POST and on ?code=", async () => {
    const { api } = await reseller(h);
    const other = await reseller(h);
    const othersCode = (await buyCode(other.api, TEAM)).code;
    const voided = (await buyCode(api, TEAM)).code;
    const em = h.services.orm.em.fork();
    await em.execute('update issued_codes set voided = true where code = ?', [voided]);
    // A direct-code gift card code of the caller's own delivered order: out of scope.
    const gift = await api.post('/orders', {
      externalOrderId: 'gift-1',
      productId: 'prod_apple_gift_card_us_10',
      qty: 1,
    });
    const giftCode = generateCode();
    await em.execute(`update orders set status = 'delivered' where id = ?`, [gift.body.orderId]);
    await em.execute(
      `insert into issued_codes (order_id, account_id, product_id, code, kind, is_test) values (?, (select account_id from orders where id = ?), 'prod_apple_gift_card_us_10', ?, 'gift_card', false)`,
      [gift.body.orderId, gift.body.orderId, giftCode],
    );

    const cases = {
      unknown: generateCode(),
      malformed: 'not a code',
      voided,
      giftCard: giftCode,
      otherAccount: othersCode,
    };
    const messages = new Set<string>();
    for (const [name, code] of Object.entries(cases)) {
      const post = await api.post('/redemptions', { code, redeemInfo: teamInfo });
      expect([name, post.status, post.body.error]).toEqual([name, 404, 'invalid_code']);
      const get = await api.get(`/redemptions?code=${encodeURIComponent(code)}`);
      expect([name, get.status, get.body.error]).toEqual([name, 404, 'invalid_code']);
      messages.add(post.body.message).add(get.body.message);
    }
    expect(messages.size).toBe(1);
    // The other account's code was not consumed by the attempt.
    expect((await other.api.get(`/redemptions?code=${othersCode}`)).body.status).toBe('not_redeemed');
  });

  test("another account's redemption id is 404 not_found, like an unknown id", async () => {
    const owner = await reseller(h);
    const stranger = await reseller(h);
    const { code } = await buyCode(owner.api, TEAM);
    const submitted = await owner.api.post('/redemptions', { code, redeemInfo: teamInfo });
    expect(submitted.status).toBe(200);
    const foreign = await stranger.api.get(`/redemptions/${submitted.body.redemptionId}`);
    const unknown = await stranger.api.get('/redemptions/rdm_doesnotexist');
    expect([foreign.status, foreign.body.error]).toEqual([404, 'not_found']);
    expect([unknown.status, unknown.body.error]).toEqual([404, 'not_found']);
    expect(foreign.body.message).toBe(unknown.body.message);
    expect((await stranger.api.post('/redemptions', { code, redeemInfo: teamInfo })).body.error).toBe('invalid_code');
    expect((await owner.api.get(`/redemptions/${submitted.body.redemptionId}`)).status).toBe(200);
  });
});

describe('GET /redemptions?code= (spec 4.4, 2.8)', () => {
  test('a code never submitted is not_redeemed with redemptionId null; the code may be typed loosely', async () => {
    const { api } = await reseller(h);
    const { code, orderId, externalOrderId } = await buyCode(api, TEAM);
    const loose = code.toLowerCase().replace(/-/g, ' ');
    const res = await api.get(`/redemptions?code=${encodeURIComponent(loose)}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      redemptionId: null,
      code,
      orderId,
      externalOrderId,
      productId: TEAM,
      status: 'not_redeemed',
      retryable: false,
      failureCode: null,
      deliverable: null,
      createdAt: null,
      fulfilledAt: null,
    });
  });

  test('without code it is 400 invalid_input', async () => {
    const { api } = await reseller(h);
    for (const path of ['/redemptions', '/redemptions?code=']) {
      const res = await api.get(path);
      expect([path, res.status, res.body.error]).toEqual([path, 400, 'invalid_input']);
    }
  });
});

describe('the session-user-id field (spec 2.3): two shapes, only the normalized user id is kept', () => {
  test.each([
    ['a UUID (any case)', USER_UUID.toUpperCase(), USER_UUID],
    ['a full authenticated session JSON', sessionJson('user-Xq81_abc'), 'user-Xq81_abc'],
  ])('%s is accepted; the attempt stores and submits only the user id', async (_name, given, userId) => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, PLUS);
    const res = await api.post('/redemptions', { code, redeemInfo: { session_user_id: given } });
    expect(res.status).toBe(200);
    await redemptionReaches(api, res.body.redemptionId, 'fulfilled');
    const [attempt] = await attemptsOf(h, res.body.redemptionId);
    expect(attempt.redeem_info).toEqual({ session_user_id: userId });
    expect(sandbox.submissions.find((s) => s.key === `${res.body.redemptionId}:1`)?.redeemInfo).toEqual({
      session_user_id: userId,
    });
    // No trace of the session JSON (its token, its e-mail) anywhere in the redemption records.
    const [dump] = await h.services.orm.em.fork().execute<{ t: string }[]>(
      `select (select coalesce(json_agg(r), '[]')::text from redemptions r where r.id = ?) ||
              (select coalesce(json_agg(a), '[]')::text from redemption_attempts a where a.redemption_id = ?) as t`,
      [res.body.redemptionId, res.body.redemptionId],
    );
    expect(dump.t).not.toContain('eyJ');
    expect(dump.t).not.toContain('jane@example.com');
  });

  test('503 session_validation_unavailable while the pre-check is down: retryable, the code is not consumed', async () => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, PLUS);
    sandbox.setSessionCheck('down');
    const res = await api.post('/redemptions', { code, redeemInfo: { session_user_id: USER_UUID } });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'session_validation_unavailable', retryable: true });
    await expectUnused(api, code);
    // Products without a session field do not depend on the pre-check.
    const team = await buyCode(api, TEAM);
    expect((await api.post('/redemptions', { code: team.code, redeemInfo: teamInfo })).status).toBe(200);

    sandbox.setSessionCheck('up');
    const retry = await api.post('/redemptions', { code, redeemInfo: { session_user_id: USER_UUID } });
    expect(retry.status).toBe(200);
  });

  test('a session the pre-check does not recognise is invalid_session_json, code unused', async () => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, PLUS);
    sandbox.setSessionCheck('reject');
    const res = await api.post('/redemptions', { code, redeemInfo: { session_user_id: USER_UUID } });
    expect([res.status, res.body.error]).toEqual([400, 'invalid_session_json']);
    await expectUnused(api, code);
  });
});

describe('pending → processing → fulfilled (spec 3.4, 2.8, part 6)', () => {
  test('the submission answers pending, the workflow moves it to processing and then fulfilled with a masked deliverable and one event', async () => {
    const { api, accountId } = await reseller(h);
    const { code, orderId, externalOrderId } = await buyCode(api, TEAM);
    sandbox.script(TEAM, {
      polls: 2,
      deliverable: '{product}: seat for organization {target}; invite sent to jane@example.com.',
    });
    const before = Math.floor(Date.now() / 1000);

    const res = await api.post('/redemptions', {
      code: code.toLowerCase(),
      redeemInfo: { account_id: ORG.toUpperCase(), email: ' jane@Example.com ' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ redemptionId: expect.stringMatching(/^rdm_/), status: 'pending', code, orderId });
    const id = res.body.redemptionId;

    const processing = await redemptionReaches(api, id, 'processing');
    expect(processing).toMatchObject({ retryable: false, failureCode: null, deliverable: null, fulfilledAt: null });
    // In progress: a resubmission is already_redeemed.
    const again = await api.post('/redemptions', { code, redeemInfo: teamInfo });
    expect([again.status, again.body.error]).toEqual([409, 'already_redeemed']);

    const done = await redemptionReaches(api, id, 'fulfilled');
    expect(done).toEqual({
      redemptionId: id,
      code,
      orderId,
      externalOrderId,
      productId: TEAM,
      status: 'fulfilled',
      retryable: false,
      failureCode: null,
      deliverable: expect.any(String),
      createdAt: expect.any(Number),
      fulfilledAt: expect.any(Number),
    });
    expect(done.createdAt).toBeGreaterThanOrEqual(before);
    expect(done.fulfilledAt).toBeGreaterThanOrEqual(done.createdAt);
    expect(done.deliverable).toContain('ChatGPT Team seat, 1 month');
    expect(done.deliverable).toContain('j***@example.com');
    expect(done.deliverable).not.toContain(ORG);
    expect(done.deliverable).not.toContain('jane@example.com');
    expect((await api.get(`/redemptions?code=${code}`)).body).toEqual(done);

    const [attempt] = await attemptsOf(h, id);
    expect(attempt).toMatchObject({
      attempt: 1,
      status: 'fulfilled',
      redeem_info: teamInfo,
      holds_resources: false,
      upstream_ref: `sbx:${id}:1`,
    });
    const events = await eventsOf(h, accountId);
    expect(events).toEqual([
      {
        id: `redemption:${id}:1:redemption.fulfilled`,
        type: 'redemption.fulfilled',
        payload: {
          orderId,
          externalOrderId,
          productId: TEAM,
          redemptionId: id,
          code,
          status: 'fulfilled',
          failureCode: null,
          retryable: false,
          fulfilledAt: done.fulfilledAt,
        },
      },
    ]);

    const resubmit = await api.post('/redemptions', { code, redeemInfo: teamInfo });
    expect([resubmit.status, resubmit.body.error, resubmit.body.details]).toEqual([
      409,
      'already_redeemed',
      { redemptionId: id, status: 'fulfilled' },
    ]);
    // The workflow is keyed redemption:<id>:<attempt> and reports where it ended.
    const state = await h.services.temporal.client.workflow
      .getHandle(redemptionWorkflowId(id, 1))
      .query(redemptionStateQuery);
    expect(state).toMatchObject({ redemptionId: id, attempt: 1, phase: 'done', status: 'fulfilled', refreshes: 3 });
  });

  test('concurrent submissions of one code: exactly one attempt, the rest 409 already_redeemed', async () => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, TEAM);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => api.post('/redemptions', { code, redeemInfo: teamInfo })),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200))
      expect([r.status, r.body.error]).toEqual([409, 'already_redeemed']);
    expect(await attemptsOf(h, ok[0].body.redemptionId)).toHaveLength(1);
    await redemptionReaches(api, ok[0].body.redemptionId, 'fulfilled');
  });
});

describe('failed → resubmit → fulfilled (spec 3.4, part 6 event ids)', () => {
  test('a failed attempt is retryable; the resubmission is a new attempt with its own terminal event and a distinct event id', async () => {
    const { api, accountId } = await reseller(h);
    const { code, orderId, externalOrderId } = await buyCode(api, TEAM);
    sandbox.enqueue(TEAM, { outcome: 'failed', polls: 1 }, { outcome: 'fulfilled', polls: 1 });

    const first = await api.post('/redemptions', { code, redeemInfo: { account_id: ORG, email: 'typo@example.con' } });
    const id = first.body.redemptionId;
    const failed = await redemptionReaches(api, id, 'failed');
    expect(failed).toMatchObject({
      status: 'failed',
      retryable: true,
      failureCode: 'fulfillment_failed',
      deliverable: null,
      fulfilledAt: null,
    });

    const second = await api.post('/redemptions', { code, redeemInfo: teamInfo });
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ redemptionId: id, status: 'pending', code, orderId });
    const fulfilled = await redemptionReaches(api, id, 'fulfilled');
    expect(fulfilled).toMatchObject({ retryable: false, failureCode: null, deliverable: expect.any(String) });

    const attempts = await attemptsOf(h, id);
    expect(attempts.map((a) => [a.attempt, a.status, a.failure_code, a.redeem_info.email])).toEqual([
      [1, 'failed', 'fulfillment_failed', 'typo@example.con'],
      [2, 'fulfilled', null, 'jane@example.com'],
    ]);
    const events = await eventsOf(h, accountId);
    expect(events.map((e) => [e.id, e.type])).toEqual([
      [`redemption:${id}:1:redemption.failed`, 'redemption.failed'],
      [`redemption:${id}:2:redemption.fulfilled`, 'redemption.fulfilled'],
    ]);
    expect(events[0].payload).toEqual({
      orderId,
      externalOrderId,
      productId: TEAM,
      redemptionId: id,
      code,
      status: 'failed',
      failureCode: 'fulfillment_failed',
      retryable: true,
      fulfilledAt: null,
    });
    expect(events[1].payload).toMatchObject({
      status: 'fulfilled',
      failureCode: null,
      retryable: false,
      fulfilledAt: fulfilled.fulfilledAt,
    });
    for (const e of events) expect(JSON.stringify(e.payload)).not.toMatch(/example\.co|deliverable|redeemInfo/);
  });

  test('409 retry_conflict while the failed attempt still holds supplier resources; accepted once they are released', async () => {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, TEAM);
    sandbox.enqueue(TEAM, { outcome: 'failed', holdPolls: 1_000_000 }, { outcome: 'fulfilled' });
    const first = await api.post('/redemptions', { code, redeemInfo: teamInfo });
    const id = first.body.redemptionId;
    await redemptionReaches(api, id, 'failed');

    const blocked = await api.post('/redemptions', { code, redeemInfo: teamInfo });
    expect(blocked.status).toBe(409);
    expect(blocked.body).toMatchObject({ error: 'retry_conflict', details: { redemptionId: id } });
    expect((await api.get(`/redemptions/${id}`)).body).toMatchObject({ status: 'failed', retryable: true });
    expect(await attemptsOf(h, id)).toHaveLength(1);

    sandbox.releaseHeldResources();
    await eventually(async () => (await attemptsOf(h, id))[0].holds_resources === false);
    const retry = await api.post('/redemptions', { code, redeemInfo: teamInfo });
    expect(retry.status).toBe(200);
    await redemptionReaches(api, id, 'fulfilled');
  });
});

describe('what the record keeps (issue 7 item 7)', () => {
  test('a password field reaches the supplier but is never stored, and is masked if the supplier echoes it', async () => {
    const base = demoCatalog.find((p) => p.id === TEAM)!;
    await seedCatalog(h.services.orm.em.fork(), [
      {
        ...base,
        id: 'prod_pw_redeem',
        slug: 'pw-redeem',
        stockMode: 'on_demand',
        limitedRemaining: null,
        redeemFieldsEn: [],
        redeemFields: [
          { key: 'email', label: 'Email', type: 'email', required: true },
          { key: 'password', label: 'Password', type: 'password', required: true },
        ],
      },
    ]);
    const { api } = await reseller(h);
    const { code } = await buyCode(api, 'prod_pw_redeem');
    sandbox.script('prod_pw_redeem', { deliverable: 'Signed in as {target} with password Tr0ub4dor&3 and activated.' });
    const res = await api.post('/redemptions', {
      code,
      redeemInfo: { email: 'jane@example.com', password: 'Tr0ub4dor&3' },
    });
    const done = await redemptionReaches(api, res.body.redemptionId, 'fulfilled');

    expect(sandbox.submissions.find((s) => s.key === `${res.body.redemptionId}:1`)?.redeemInfo).toEqual({
      email: 'jane@example.com',
      password: 'Tr0ub4dor&3',
    });
    expect((await attemptsOf(h, res.body.redemptionId))[0].redeem_info).toEqual({
      email: 'jane@example.com',
      password: '********',
    });
    expect(done.deliverable).not.toContain('Tr0ub4dor&3');
    expect(done.deliverable).not.toContain('jane@example.com');
    const [dump] = await h.services.orm.em.fork().execute<{ t: string }[]>(
      `select (select json_agg(r)::text from redemptions r where r.id = ?) || (select json_agg(a)::text from redemption_attempts a where a.redemption_id = ?)
         || (select coalesce(json_agg(e), '[]')::text from events e where e.id like ?) as t`,
      [res.body.redemptionId, res.body.redemptionId, `redemption:${res.body.redemptionId}:%`],
    );
    expect(dump.t).not.toContain('Tr0ub4dor');
  });
});

describe('the integration test product (spec 1)', () => {
  test('its code completes within the submission: fulfilled, fixed deliverable, redemption.fulfilled; a resubmission is already_redeemed', async () => {
    const { api, accountId } = await reseller(h, '0.02');
    const { code, orderId } = await buyCode(api, 'prod_api_order_test');
    const res = await api.post('/redemptions', { code, redeemInfo: {} });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ redemptionId: expect.stringMatching(/^rdm_/), status: 'pending', code, orderId });
    const id = res.body.redemptionId;
    // No waiting: the state is final as soon as the submission returns.
    const view = (await api.get(`/redemptions/${id}`)).body;
    expect(view).toMatchObject({
      status: 'fulfilled',
      deliverable: TEST_DELIVERABLE,
      retryable: false,
      failureCode: null,
      fulfilledAt: expect.any(Number),
    });
    expect((await eventsOf(h, accountId)).map((e) => e.id)).toEqual([`redemption:${id}:1:redemption.fulfilled`]);

    const again = await api.post('/redemptions', { code, redeemInfo: {} });
    expect([again.status, again.body.error]).toEqual([409, 'already_redeemed']);

    // Any redeemInfo is accepted, and none of it is kept.
    const second = await buyCode(api, 'prod_api_order_test');
    const anyInfo = await api.post('/redemptions', {
      code: second.code,
      redeemInfo: { whatever: 1, nested: { a: true } },
    });
    expect(anyInfo.status).toBe(200);
    expect((await attemptsOf(h, anyInfo.body.redemptionId))[0].redeem_info).toEqual({});
    await expectLedgerMatchesBalance(h, accountId);
  });
});

describe('manual fulfilment: an operator decides with `npx wholesale support redemption fulfill|reject <id>`', () => {
  test('fulfill: the redemption waits in processing until the operator fulfils it', async () => {
    const { api, accountId } = await reseller(h);
    const { code } = await buyCode(api, TELEGRAM);
    const res = await api.post('/redemptions', { code, redeemInfo: { telegram_username: '@durov_42' } });
    const id = res.body.redemptionId;
    await redemptionReaches(api, id, 'processing');
    const handle = h.services.temporal.client.workflow.getHandle(redemptionWorkflowId(id, 1));
    await eventually(async () => (await handle.query(redemptionStateQuery)).phase === 'waiting');
    // No automatic refresh moves a manual product along.
    expect((await handle.query(redemptionStateQuery)).refreshes).toBe(0);

    const cli = await wholesale(
      h,
      'support',
      'redemption',
      'fulfill',
      id,
      '--by',
      'Olga Ops',
      '--reason',
      'applied to @durov_42 by hand',
    );
    expect(cli).toMatchObject({ exitCode: 0 });
    const printed = JSON.parse(cli.stdout);
    expect(printed).toMatchObject({ redemptionId: id, status: 'fulfilled' });
    const view = (await api.get(`/redemptions/${id}`)).body;
    expect(view).toMatchObject({ status: 'fulfilled', retryable: false, fulfilledAt: expect.any(Number) });
    expect(view.deliverable).toContain('Fulfilled by an operator');
    expect(view.deliverable).not.toContain('durov_42');
    expect((await eventsOf(h, accountId)).map((e) => e.id)).toEqual([`redemption:${id}:1:redemption.fulfilled`]);
    const actions = await h.services.orm.em
      .fork()
      .execute<{ action: string; reason: string }[]>(
        'select action, reason from support_actions where subject_id = ?',
        [id],
      );
    expect(actions).toEqual([{ action: 'redemption.fulfill', reason: 'applied to @durov_42 by hand' }]);
    expect((await auditRows(h, 'subject_id = ?', [id])).map((r) => [r.action, r.actor, r.reason, r.outcome])).toEqual([
      ['redemption.fulfil', 'cli:Olga Ops', 'applied to @durov_42 by hand', 'ok'],
    ]);

    const late = await wholesale(
      h,
      'support',
      'redemption',
      'reject',
      id,
      '--by',
      'Olga Ops',
      '--reason',
      'changed my mind',
    );
    expect(late.exitCode).not.toBe(0);
    expect(JSON.parse(late.stderr)).toMatchObject({ error: 'invalid_input' });
  });

  test('reject: failed with rejected_by_operator and retryable; a corrected resubmission is a new attempt', async () => {
    const { api, accountId } = await reseller(h);
    const { code } = await buyCode(api, TELEGRAM);
    const first = await api.post('/redemptions', { code, redeemInfo: { telegram_username: 'wrong_name' } });
    const id = first.body.redemptionId;
    await redemptionReaches(api, id, 'processing');

    const cli = await wholesale(
      h,
      'support',
      'redemption',
      'reject',
      id,
      '--by',
      'Olga Ops',
      '--reason',
      'no such user',
    );
    expect(cli.exitCode).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({
      status: 'failed',
      failureCode: 'rejected_by_operator',
      retryable: true,
    });

    const second = await api.post('/redemptions', { code, redeemInfo: { telegram_username: 'right_name' } });
    expect(second.status).toBe(200);
    await redemptionReaches(api, id, 'processing');
    expect(
      (await wholesale(h, 'support', 'redemption', 'fulfill', id, '--by', 'Olga Ops', '--reason', 'applied by hand'))
        .exitCode,
    ).toBe(0);
    await redemptionReaches(api, id, 'fulfilled');
    expect((await eventsOf(h, accountId)).map((e) => e.id)).toEqual([
      `redemption:${id}:1:redemption.failed`,
      `redemption:${id}:2:redemption.fulfilled`,
    ]);
  });

  test('an unknown id is refused', async () => {
    const cli = await wholesale(
      h,
      'support',
      'redemption',
      'fulfill',
      'rdm_nope',
      '--by',
      'Olga Ops',
      '--reason',
      'applied by hand',
    );
    expect(cli.exitCode).not.toBe(0);
    expect(JSON.parse(cli.stderr)).toMatchObject({ error: 'not_found' });
  });
});
