import {
  auditRows,
  consoleSession,
  currentStep,
  freshCode,
  postFrom,
  roomInStep,
  signedIn,
  signInWith,
  staffMember,
  stuckOrder,
  STUCK_ORDER_ENV,
  totp,
} from '../helpers/console';
import { startHarness, type Harness } from '../helpers/harness';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV } from '../helpers/payments';
import { adminApi, reseller, wholesale } from '../helpers/procurement';

// Issue 30, the audit log: every console and admin-API action is one append-only row (who, role,
// what, on which ids, reason, request id, when), its outcome appended once known. ADMIN_TOKEN
// actions are recorded as "token" (automation names no person). The database refuses to change
// or delete a row. Admins read and filter it in the console; nobody else can. And the first admin
// comes from `npx wholesale staff create`, whose setup link enrols a password and a TOTP app.
let h: Harness;
const TOKEN = 'admin-token-for-audit-tests';

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    ADMIN_TOKEN: TOKEN,
    ...STUCK_ORDER_ENV,
  });
});
afterAll(() => h?.stop());

test('admin-API actions are rows recorded as "token", with the typed actor in details, the request id and the outcome', async () => {
  const { api, accountId } = await reseller(h, '100.00');
  const orderId = await stuckOrder(api, 'prod_robux_400', 2, 1, 'audit-token-1');

  const admin = adminApi(h, TOKEN);
  const resumed = await admin.post(`/orders/${orderId}/resume`, { actor: 'ops-bot', reason: 'stock is back' });
  expect(resumed.status).toBe(200);
  const missing = await admin.post('/redemptions/rdm_missing/claim', { actor: 'ops-bot' });
  expect(missing.status).toBe(404);
  const refused = await admin.post(`/orders/${orderId}/deliver`, {
    actor: 'ops-bot',
    reason: 'by hand',
    codes: ['HAND-1', 'HAND-2', 'HAND-3'],
  });
  expect(refused.status).toBe(400);

  const rows = await auditRows(h, `role = 'token'`);
  expect(
    rows.map((r) => [
      r.actor,
      r.actor_email,
      r.action,
      r.subject_id,
      r.account_id,
      r.reason,
      r.details,
      r.request_id,
      r.outcome,
    ]),
  ).toEqual([
    [
      'token',
      null,
      'order.resume',
      orderId,
      accountId,
      'stock is back',
      { typedActor: 'ops-bot' },
      resumed.headers.get('x-request-id'),
      'ok',
    ],
    [
      'token',
      null,
      'redemption.claim',
      'rdm_missing',
      null,
      'claimed from the queue',
      { typedActor: 'ops-bot' },
      missing.body.requestId,
      'not_found',
    ],
    [
      'token',
      null,
      'order.deliver',
      orderId,
      accountId,
      'by hand',
      { typedActor: 'ops-bot', codes: 3 },
      refused.body.requestId,
      'invalid_input',
    ],
  ]);
  // Codes sent to an action are counted, never kept.
  expect(JSON.stringify(rows)).not.toContain('HAND-1');
  await expectLedgerMatchesBalance(h, accountId);
});

test('the database refuses UPDATE, DELETE and TRUNCATE on the audit log and its outcomes', async () => {
  const m = await staffMember(h, 'viewer');
  await signedIn(h, m);
  const [row] = await auditRows(h, 'staff_id = ?', [m.id]);
  expect(row).toMatchObject({ action: 'staff.sign_in', outcome: 'ok' });
  const em = h.services.orm.em.fork();
  const attempts: [string, string][] = [
    ['update', `update audit_log set reason = 'rewritten' where id = ${row.id}`],
    ['delete', `delete from audit_log where id = ${row.id}`],
    ['truncate', 'truncate audit_log cascade'],
    ['outcome update', `update audit_outcomes set outcome = 'forged' where audit_id = ${row.id}`],
    ['outcome delete', `delete from audit_outcomes where audit_id = ${row.id}`],
  ];
  for (const [name, sql] of attempts) {
    await expect(em.execute(sql).then(() => name)).rejects.toThrow(/the audit log is append-only/);
  }
  expect(await auditRows(h, 'a.id = ?', [row.id])).toEqual([row]);
});

test('admins read and filter the log in the console; support and viewers get 403', async () => {
  const adminMember = await staffMember(h, 'admin', { name: 'Audit Admin' });
  const support = await staffMember(h, 'support', { name: 'Sam Support' });
  const viewer = await staffMember(h, 'viewer');
  const { accountId } = await reseller(h, '20.00');
  const a = await signedIn(h, adminMember);
  expect(
    (
      await postFrom(a, `/console/accounts/${accountId}`, `/console/accounts/${accountId}/adjust`, {
        amount: '1.00',
        reason: 'audit filter check',
      })
    ).status,
  ).toBe(303);
  for (const m of [support, viewer]) expect((await (await signedIn(h, m)).get('/console/audit')).status).toBe(403);

  const all = await a.get('/console/audit');
  expect(all.status).toBe(200);
  expect(all.text).toContain('balance.adjust');
  expect(all.text).toContain('Sam Support'); // sign-ins are rows too
  const byAccount = await a.get(`/console/audit?id=${accountId}`);
  expect(byAccount.text.match(/data-testid="audit-row"/g)).toHaveLength(1);
  expect(byAccount.text).toContain('audit filter check');
  const byActor = await a.get(`/console/audit?actor=${encodeURIComponent(support.email)}`);
  expect(byActor.text).toContain('staff.sign_in');
  expect(byActor.text).not.toContain('balance.adjust');
  // As the filter form sends it: unused fields empty.
  const byPrefix = await a.get('/console/audit?actor=&action=balance.&id=');
  expect(byPrefix.status).toBe(200);
  expect((await a.get('/console/search?q=')).status).toBe(200);
  expect(byPrefix.text.match(/data-testid="audit-action">balance\.adjust</g)).toHaveLength(1);
  expect(byPrefix.text).not.toContain('staff.sign_in');
});

test('`npx wholesale staff create` prints a one-time setup link: password and TOTP are enrolled there, recovery codes shown once', async () => {
  const email = `first-admin-${Date.now()}@example.com`;
  const out = await wholesale(
    h,
    'staff',
    'create',
    '--role',
    'admin',
    '--email',
    email,
    '--name',
    'First Admin',
    '--by',
    'Root Operator',
    '--reason',
    'the first admin',
  );
  expect(out.exitCode).toBe(0);
  expect(out.json).toMatchObject({
    email,
    role: 'admin',
    name: 'First Admin',
    setupUrl: expect.stringMatching(/\/console\/setup\?token=[\w-]{43}$/),
  });
  expect(JSON.stringify(out.json)).not.toMatch(/password_hash|totp_secret/);
  const setupPath = new URL(out.json.setupUrl).pathname + new URL(out.json.setupUrl).search;
  expect(
    (await auditRows(h, `action = 'staff.invite' and role = 'cli'`)).map((r) => [r.details.email, r.outcome]),
  ).toEqual([[email, 'ok']]);
  expect((await auditRows(h, `action = 'staff.invite' and role = 'cli'`)).map((r) => [r.actor, r.reason])).toEqual([
    ['cli:Root Operator', 'the first admin'],
  ]);
  expect(
    (
      await wholesale(
        h,
        'staff',
        'create',
        '--role',
        'owner',
        '--email',
        'x@example.com',
        '--name',
        'X',
        '--by',
        'Root Operator',
        '--reason',
        'r',
      )
    ).json,
  ).toMatchObject({ error: 'invalid_input' });

  const s = consoleSession(h);
  const page = await s.get(setupPath);
  expect(page.status).toBe(200);
  const secret = /data-testid="totp-secret">([A-Z2-7]+)</.exec(page.text)![1];
  expect(page.text).toContain('src="data:image/png;base64,');
  const token = new URL(out.json.setupUrl).searchParams.get('token')!;
  await roomInStep();
  const badCode = await s.post('/console/setup', { token, password: 'a long enough password', code: '000000' });
  expect([badCode.status, badCode.text]).toEqual([400, expect.stringContaining('That code is not right')]);
  const step = currentStep();
  const done = await s.post('/console/setup', { token, password: 'a long enough password', code: totp(secret, step) });
  expect(done.status).toBe(200);
  const codes = [...done.text.matchAll(/data-testid="recovery-code">([0-9a-f-]+)</g)].map((m) => m[1]);
  expect(codes).toHaveLength(10);
  expect((await s.get(setupPath)).status).toBe(404);

  // The setup code's step is spent; the next one signs in, and the new admin manages staff.
  const member = {
    email,
    password: 'a long enough password',
    secret,
    lastStep: step,
    id: '',
    name: 'First Admin',
    role: 'admin' as const,
    recoveryCodes: codes,
  };
  expect((await signInWith(consoleSession(h), member, totp(secret, step))).status).toBe(401);
  const signed = consoleSession(h);
  expect((await signInWith(signed, member, await freshCode(member))).location).toBe('/console');
  const invited = await postFrom(signed, '/console/staff', '/console/staff', {
    name: 'New Viewer',
    email: `viewer-${Date.now()}@example.com`,
    role: 'viewer',
  });
  expect(invited.status).toBe(200);
  expect(invited.text).toMatch(/data-testid="setup-link">http[^<]+\/console\/setup\?token=[\w-]{43}</);
  expect(
    (await auditRows(h, `action = 'staff.invite' and actor = 'First Admin'`)).map((r) => [r.role, r.outcome]),
  ).toEqual([['admin', 'ok']]);
});
