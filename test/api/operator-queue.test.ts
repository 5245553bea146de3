import { randomBytes } from 'node:crypto';
import { demoCatalog, seedCatalog } from '../../src/db/seed';
import { redemptionWorkflowId } from '../../src/contracts/redemptions-contract';
import { startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { adminApi } from '../helpers/procurement';
import { attemptsOf, buyCode, eventsOf, redemptionReaches, reseller, wholesale, type Api } from '../helpers/redemption';
import { auditRows } from '../helpers/console';
import { decodedHistoryText } from '../helpers/history';

// Issue 26, operators: with REDEMPTION_UPSTREAM=operators every redemption waits in a queue that
// people work from (admin API and `npx wholesale redemptions ...`). One operator holds a claim at
// a time and it lapses; the holder fulfils or fails with the spec's codes (2.8, 3.4), the reseller
// sees the spec's states and events (part 6), a failure that holds resources makes a resubmission
// retry_conflict (4.4, 7) until released. Redeem details appear in the claim's answer only.
let h: Harness;
const TOKEN = 'admin-token-for-operator-queue';
const CLAIM_SECONDS = 3;
const PW_PRODUCT = 'prod_oq_pw_redeem';

beforeAll(async () => {
  h = await startHarness({
    REDEMPTION_UPSTREAM: 'operators',
    ADMIN_TOKEN: TOKEN,
    REDEMPTION_REFRESH_SECONDS: '1',
    OPERATOR_CLAIM_SECONDS: String(CLAIM_SECONDS),
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  const base = demoCatalog.find((p) => p.id === 'prod_chatgpt_team_1m')!;
  await seedCatalog(h.services.orm.em.fork(), [
    {
      ...base,
      id: PW_PRODUCT,
      slug: 'oq-pw-redeem',
      stockMode: 'on_demand',
      limitedRemaining: null,
      redeemFieldsEn: [],
      redeemFields: [
        { key: 'email', label: 'Email', type: 'email', required: true },
        { key: 'password', label: 'Password', type: 'password', required: true },
      ],
    },
  ]);
});
afterAll(() => h?.stop());

const admin = () => adminApi(h, TOKEN);
const claim = (id: string, actor: string) => admin().post(`/redemptions/${id}/claim`, { actor });

/** A reseller's code of the password product submitted: it waits in the queue as processing. */
async function queued(): Promise<{
  api: Api;
  accountId: string;
  redemptionId: string;
  code: string;
  email: string;
  password: string;
}> {
  const { api, accountId } = await reseller(h);
  const { code } = await buyCode(api, PW_PRODUCT);
  const email = `oq-${randomBytes(4).toString('hex')}@example.com`;
  const password = `Pw-${randomBytes(6).toString('hex')}!`;
  const res = await api.post('/redemptions', { code, redeemInfo: { email, password } });
  expect(res.status).toBe(200);
  await redemptionReaches(api, res.body.redemptionId, 'processing');
  // `processing` is set as the attempt begins; the queue row is written by the submission just after.
  await eventually(async () => {
    const list = await admin().get('/redemptions/queue');
    return list.body.redemptions?.some((r: { redemptionId: string }) => r.redemptionId === res.body.redemptionId)
      ? true
      : undefined;
  });
  return { api, accountId, redemptionId: res.body.redemptionId, code, email, password };
}

async function actionsOf(redemptionId: string) {
  return h.services.orm.em
    .fork()
    .execute<{ action: string; actor: string; reason: string }[]>(
      'select action, actor, reason from support_actions where subject_id = ? order by id',
      [redemptionId],
    );
}

test('an automatic product waits in the queue; two operators claim it at once and exactly one wins (409 names holder and expiry)', async () => {
  const { redemptionId, email, password } = await queued();

  const list = await admin().get('/redemptions/queue');
  expect(list.status).toBe(200);
  const item = list.body.redemptions.find((r: { redemptionId: string }) => r.redemptionId === redemptionId);
  expect(item).toMatchObject({
    productId: PW_PRODUCT,
    status: 'processing',
    claim: null,
    ageSeconds: expect.any(Number),
  });
  // Redeem details are never in a list.
  expect(JSON.stringify(list.body)).not.toContain(email);
  expect(JSON.stringify(list.body)).not.toContain(password);

  const [a, b] = await Promise.all([claim(redemptionId, 'alice'), claim(redemptionId, 'bob')]);
  const won = [a, b].filter((r) => r.status === 200);
  const lost = [a, b].filter((r) => r.status === 409);
  expect([won.length, lost.length]).toEqual([1, 1]);
  const holder = won[0].body.claim.holder;
  // The claim's answer is where the holder reads the details, the password decrypted.
  expect(won[0].body.redeemInfo).toEqual({ email, password });
  expect(lost[0].body).toMatchObject({
    error: 'claim_conflict',
    details: { holder, expiresAt: won[0].body.claim.expiresAt },
  });
  expect(lost[0].body.message).toContain(holder);
  expect(JSON.stringify(lost[0].body)).not.toContain(password);

  const after = await admin().get('/redemptions/queue');
  expect(after.body.redemptions.find((r: { redemptionId: string }) => r.redemptionId === redemptionId).claim).toEqual(
    won[0].body.claim,
  );
  expect(JSON.stringify(after.body)).not.toContain(password);
  expect((await actionsOf(redemptionId)).filter((x) => x.action === 'redemption.claim')).toEqual([
    { action: 'redemption.claim', actor: holder, reason: 'claimed from the queue' },
  ]);
});

test('an expired claim is free again: another operator takes it and the first can no longer decide', async () => {
  const { redemptionId } = await queued();
  expect((await claim(redemptionId, 'alice')).status).toBe(200);
  expect((await claim(redemptionId, 'bob')).status).toBe(409);
  const taken = await eventually(
    async () => {
      const res = await claim(redemptionId, 'bob');
      return res.status === 200 ? res : undefined;
    },
    (CLAIM_SECONDS + 5) * 1000,
    250,
  );
  expect(taken.body.claim.holder).toBe('bob');
  const late = await admin().post(`/redemptions/${redemptionId}/fulfil`, {
    actor: 'alice',
    reason: 'done',
    deliverable: 'Activated.',
  });
  expect(late.status).toBe(409);
  expect(late.body).toMatchObject({ error: 'claim_conflict', details: { holder: 'bob' } });
  expect((await attemptsOf(h, redemptionId))[0].status).toBe('processing');
});

test('fulfil by the holder → fulfilled with the deliverable and redemption.fulfilled; the details never reach history', async () => {
  const { api, accountId, redemptionId, email, password } = await queued();
  expect((await claim(redemptionId, 'carol')).status).toBe(200);
  const deliverable = `ChatGPT Team seat activated; invite sent ${randomBytes(3).toString('hex')}.`;
  const res = await admin().post(`/redemptions/${redemptionId}/fulfil`, {
    actor: 'carol',
    reason: 'seat added by hand',
    deliverable,
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ redemptionId, status: 'fulfilled', failureCode: null, deliverable });

  const seen = await redemptionReaches(api, redemptionId, 'fulfilled');
  expect(seen).toMatchObject({ deliverable, retryable: false, failureCode: null, fulfilledAt: expect.any(Number) });
  const events = await eventually(async () => {
    const ev = (await eventsOf(h, accountId)).filter((e) => e.payload.redemptionId === redemptionId);
    return ev.length ? ev : undefined;
  });
  expect(events.map((e) => [e.id, e.type])).toEqual([
    [`redemption:${redemptionId}:1:redemption.fulfilled`, 'redemption.fulfilled'],
  ]);
  expect(JSON.stringify(events)).not.toContain(deliverable);
  expect(await actionsOf(redemptionId)).toEqual([
    { action: 'redemption.claim', actor: 'carol', reason: 'claimed from the queue' },
    { action: 'redemption.fulfil', actor: 'carol', reason: 'seat added by hand' },
  ]);
  // Decided: out of the queue, and the details are not shown again.
  expect(
    (await admin().get('/redemptions/queue')).body.redemptions.map((r: { redemptionId: string }) => r.redemptionId),
  ).not.toContain(redemptionId);
  expect((await claim(redemptionId, 'carol')).status).toBe(409);

  const history = await decodedHistoryText(
    h.services.temporal.client,
    h.config.TEMPORAL_PAYLOAD_KEYS,
    redemptionWorkflowId(redemptionId, 1),
  );
  expect(history).toContain('operatorDecision');
  expect(history).not.toContain(email);
  expect(history).not.toContain(password);
  expect(history).not.toContain(deliverable);
});

test('fail with resources held → failed, redemption.failed, resubmission retry_conflict until released (spec 4.4, 7)', async () => {
  const { api, accountId, redemptionId, code, email, password } = await queued();
  expect((await claim(redemptionId, 'dave')).status).toBe(200);
  const res = await admin().post(`/redemptions/${redemptionId}/fail`, {
    actor: 'dave',
    reason: 'supplier order stuck',
    failureCode: 'fulfillment_failed',
    holdsResources: true,
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'failed', failureCode: 'fulfillment_failed', retryable: true });
  await redemptionReaches(api, redemptionId, 'failed');
  const events = await eventually(async () => {
    const ev = (await eventsOf(h, accountId)).filter((e) => e.payload.redemptionId === redemptionId);
    return ev.length ? ev : undefined;
  });
  expect(events.map((e) => [e.type, e.payload.failureCode, e.payload.retryable])).toEqual([
    ['redemption.failed', 'fulfillment_failed', true],
  ]);

  const retry = { code, redeemInfo: { email, password } };
  const conflict = await api.post('/redemptions', retry);
  expect(conflict.status).toBe(409);
  expect(conflict.body.error).toBe('retry_conflict');

  const released = await admin().post(`/redemptions/${redemptionId}/release`, {
    actor: 'dave',
    reason: 'supplier cancelled the order',
  });
  expect(released.status).toBe(200);
  const again = await eventually(
    async () => {
      const r = await api.post('/redemptions', retry);
      return r.status === 200 ? r : undefined;
    },
    20_000,
    500,
  );
  expect(again.body).toMatchObject({ redemptionId, status: 'pending' });
  await redemptionReaches(api, redemptionId, 'processing');
  expect((await attemptsOf(h, redemptionId)).map((a) => [a.attempt, a.status, a.failure_code])).toEqual([
    [1, 'failed', 'fulfillment_failed'],
    [2, 'processing', null],
  ]);
  expect((await actionsOf(redemptionId)).map((a) => [a.action, a.actor, a.reason])).toEqual([
    ['redemption.claim', 'dave', 'claimed from the queue'],
    ['redemption.fail', 'dave', 'supplier order stuck'],
    ['redemption.release', 'dave', 'supplier cancelled the order'],
  ]);
});

test('the CLI works a manual product: queue, claim (details shown), fail rejected_by_operator', async () => {
  const { api } = await reseller(h);
  const { code } = await buyCode(api, 'prod_telegram_premium_3m');
  const res = await api.post('/redemptions', { code, redeemInfo: { telegram_username: '@oq_customer' } });
  const { redemptionId } = res.body;
  await redemptionReaches(api, redemptionId, 'processing');
  await eventually(async () =>
    (await admin().get('/redemptions/queue')).body.redemptions?.some(
      (r: { redemptionId: string }) => r.redemptionId === redemptionId,
    )
      ? true
      : undefined,
  );

  const list = await wholesale(h, 'redemptions', 'queue');
  expect(list.exitCode).toBe(0);
  expect(JSON.parse(list.stdout).redemptions.map((r: { redemptionId: string }) => r.redemptionId)).toContain(
    redemptionId,
  );
  expect(list.stdout).not.toContain('oq_customer');

  const claimed = await wholesale(h, 'redemptions', 'claim', redemptionId, '--actor', 'erin');
  expect(claimed.exitCode).toBe(0);
  expect(JSON.parse(claimed.stdout).redeemInfo).toEqual({ telegram_username: 'oq_customer' });

  const failed = await wholesale(
    h,
    'redemptions',
    'fail',
    redemptionId,
    '--actor',
    'erin',
    '--reason',
    'username does not exist',
    '--failure-code',
    'rejected_by_operator',
  );
  expect(failed.exitCode).toBe(0);
  expect(JSON.parse(failed.stdout)).toMatchObject({
    status: 'failed',
    failureCode: 'rejected_by_operator',
    retryable: true,
  });
  // Each command is an audit row by the operator it names (--actor, the older name of --by).
  expect(
    (await auditRows(h, 'subject_id = ?', [redemptionId])).map((r) => [r.action, r.actor, r.reason, r.outcome]),
  ).toEqual([
    ['redemption.claim', 'cli:erin', 'claimed from the queue', 'ok'],
    ['redemption.fail', 'cli:erin', 'username does not exist', 'ok'],
  ]);
  // Nothing held: the customer may resubmit at once.
  expect((await api.post('/redemptions', { code, redeemInfo: { telegram_username: '@oq_customer2' } })).status).toBe(
    200,
  );
});
