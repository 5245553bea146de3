import { randomBytes } from 'node:crypto';
import { demoCatalog, seedCatalog } from '../../src/db/seed';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { createAccount } from '../../src/services/accounts/accounts';
import { adjustBalance } from '../../src/services/payments/admin';
import { redemptionWorkflowId } from '../../src/contracts/redemptions-contract';
import { CONSOLE_COOKIE } from '../../src/console/console-session';
import { signedUp, type AccountSession } from '../helpers/account-session';
import {
  auditRows,
  consoleSession,
  freshCode,
  postFrom,
  roomInStep,
  signedIn,
  signInWith,
  staffMember,
  stuckOrder,
  STUCK_ORDER_ENV,
  totp,
  type Member,
} from '../helpers/console';
import { startHarness, type Harness } from '../helpers/harness';
import { decodedHistoryText } from '../helpers/history';
import { client, eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV } from '../helpers/payments';
import { reseller, supportActionsOf, type Api } from '../helpers/procurement';
import { buyCode, freshRateWindow, redemptionReaches } from '../helpers/redemption';

// Issue 30 "Done when", over real HTTP against the real API, worker, Postgres and Temporal: staff
// sign in with password and TOTP (wrong, replayed and too many codes refused, the last rate
// limited); each role does only what it may (403 and nothing changed otherwise); a form without
// its CSRF token changes nothing; a reseller's session does not open the console; markup is
// escaped everywhere; two agents claiming one redemption → one wins, and redeem details appear on
// the winner's claim page only. Money is checked in the balance and the ledger.
let h: Harness;
let admin: Member, alice: Member, bob: Member, viewer: Member;
const PW_PRODUCT = 'prod_console_pw_redeem';

beforeAll(async () => {
  h = await startHarness({
    ...PAYMENT_ENV,
    ...STUCK_ORDER_ENV,
    REDEMPTION_UPSTREAM: 'operators',
    REDEMPTION_REFRESH_SECONDS: '1',
    OPERATOR_CLAIM_SECONDS: '120',
  });
  const base = demoCatalog.find((p) => p.id === 'prod_chatgpt_team_1m')!;
  await seedCatalog(h.services.orm.em.fork(), [
    {
      ...base,
      id: PW_PRODUCT,
      slug: 'console-pw-redeem',
      stockMode: 'on_demand',
      limitedRemaining: null,
      redeemFieldsEn: [],
      redeemFields: [
        { key: 'email', label: 'Email', type: 'email', required: true },
        { key: 'password', label: 'Password', type: 'password', required: true },
      ],
    },
  ]);
  admin = await staffMember(h, 'admin', { name: 'Ada Admin' });
  alice = await staffMember(h, 'support', { name: 'Alice Agent' });
  bob = await staffMember(h, 'support', { name: 'Bob Agent' });
  viewer = await staffMember(h, 'viewer', { name: 'Vic Viewer' });
});
afterAll(() => h?.stop());
beforeEach(() => sandboxSupplierControl.reset());

/** One session per shared member for the whole file: each sign-in spends a TOTP step. */
const sessions = new Map<Member, Promise<AccountSession>>();
const sessionOf = (m: Member) => {
  if (!sessions.has(m)) sessions.set(m, signedIn(h, m));
  return sessions.get(m)!;
};

const actionRows = (orderOrAccount: string) =>
  auditRows(h, `(subject_id = ? or account_id = ?) and action not like 'staff.%'`, [orderOrAccount, orderOrAccount]);

describe('sign-in: email, password and TOTP', () => {
  test('a wrong code is refused; the right one signs in on a new session id; a replayed one and a spent recovery code are refused', async () => {
    const m = await staffMember(h, 'support');
    const s = consoleSession(h);
    await roomInStep(12);
    const code = totp(m.secret);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const refused = await signInWith(s, m, wrong);
    expect([refused.status, refused.text]).toEqual([
      401,
      expect.stringContaining('The email, password or code is not right.'),
    ]);
    expect((await s.get('/console')).location).toBe('/console/sign-in');
    expect((await signInWith(s, { ...m, password: 'not-the-password' }, code)).status).toBe(401);

    const before = s.cookies.get(CONSOLE_COOKIE);
    const ok = await signInWith(s, m, code);
    expect([ok.status, ok.location]).toEqual([303, '/console']);
    expect(s.cookies.get(CONSOLE_COOKIE)).not.toBe(before);
    const cookie = ok.headers.getSetCookie().find((c) => c.startsWith(`${CONSOLE_COOKIE}=`))!;
    expect(cookie).toMatch(/; Path=\/console/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    // Idle timeout: half an hour from the last request, against a reseller's SESSION_TTL_SECONDS (12 hours).
    const idleMs = Date.parse(/; Expires=([^;]+)/.exec(cookie)![1]) - Date.now();
    expect(idleMs).toBeGreaterThan(29 * 60_000);
    expect(idleMs).toBeLessThanOrEqual(30 * 60_000);
    expect(idleMs).toBeLessThan(h.config.SESSION_TTL_SECONDS * 1000);
    const home = await s.get('/console');
    expect([home.status, home.text]).toEqual([200, expect.stringContaining(m.email)]);

    // The same code again, from another browser: its time step is spent.
    const replay = await signInWith(consoleSession(h), m, code);
    expect(replay.status).toBe(401);
    expect(
      (await auditRows(h, `staff_id = ? and action = 'staff.sign_in'`, [m.id])).map((r) => [
        r.details.recoveryCodeUsed,
        r.outcome,
      ]),
    ).toEqual([[false, 'ok']]);

    // A recovery code instead of the app's code signs in once (another member: five tries per email per window).
    const other = await staffMember(h, 'viewer');
    const [recovery] = other.recoveryCodes;
    expect((await signInWith(consoleSession(h), other, recovery.toUpperCase())).status).toBe(303);
    expect((await signInWith(consoleSession(h), other, recovery)).status).toBe(401);
    expect(
      (await auditRows(h, `staff_id = ? and action = 'staff.sign_in'`, [other.id])).map(
        (r) => r.details.recoveryCodeUsed,
      ),
    ).toEqual([true]);
  });

  test('too many tries: five per email per window, then 429 with Retry-After even for the right code', async () => {
    const m = await staffMember(h, 'support');
    await freshRateWindow(15 * 60, 45);
    await roomInStep(12);
    const s = consoleSession(h);
    for (let i = 0; i < 5; i++) expect((await signInWith(s, m, '000000')).status).toBe(401);
    const limited = await signInWith(s, m, totp(m.secret));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.text).toContain('Too many sign-in attempts');
    expect((await s.get('/console')).location).toBe('/console/sign-in');
  });

  test("a reseller's session cookie does not open the console, under either cookie name", async () => {
    const { session } = await signedUp(h);
    expect((await session.get('/account')).status).toBe(200);
    for (const cookie of [`wholesale.sid=${session.sid}`, `${CONSOLE_COOKIE}=${session.sid}`]) {
      const res = await fetch(`${h.baseUrl}/console`, { headers: { cookie }, redirect: 'manual' });
      expect([cookie, res.status, res.headers.get('location')]).toEqual([cookie, 303, '/console/sign-in']);
    }
  });
});

describe('roles and CSRF on a needs_attention order: refused requests change nothing', () => {
  let orderId: string;
  let accountId: string;
  let keyId: string;
  let api: Api;
  beforeAll(async () => {
    ({ api, accountId } = await reseller(h, '200.00'));
    orderId = await stuckOrder(api, 'prod_apple_gift_card_us_50', 2, 1, 'console-refusals');
    [{ id: keyId }] = await h.services.orm.em
      .fork()
      .execute<{ id: string }[]>('select id from api_keys where account_id = ?', [accountId]);
  });

  async function unchanged() {
    expect((await api.get(`/orders/${orderId}`)).body).toMatchObject({
      status: 'paid',
      fulfillmentStatus: 'needs_attention',
      codes: [],
    });
    const l = await expectLedgerMatchesBalance(h, accountId);
    expect(l.rows.map((r) => [r.type, r.amount])).toEqual([
      ['adjust', '200.00'],
      ['purchase', '-97.60'],
    ]);
    expect((await api.get('/balance')).status).toBe(200); // the key was not revoked
    expect(await actionRows(orderId)).toEqual([]);
    expect(await actionRows(accountId)).toEqual([]);
  }

  test('a viewer sees the order without any action and gets 403 on every POST; support cannot adjust, revoke, invite or read the audit log', async () => {
    const v = await sessionOf(viewer);
    const a = await sessionOf(alice);
    const page = await v.get(`/console/orders/${orderId}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('needs_attention');
    for (const id of ['deliver', 'resume', 'refund']) expect(page.text).not.toContain(`data-testid="${id}"`);
    expect((await v.get(`/console/accounts/${accountId}`)).text).not.toMatch(/data-testid="(adjust|revoke|retry)"/);
    expect((await a.get(`/console/orders/${orderId}`)).text).toContain('data-testid="deliver"');
    expect((await a.get(`/console/accounts/${accountId}`)).text).not.toMatch(/data-testid="(adjust|revoke)"/);

    const reason = { reason: 'should not happen' };
    const cases: [string, AccountSession, string, Record<string, string>][] = [
      ['viewer resume', v, `/console/orders/${orderId}/resume`, reason],
      ['viewer deliver', v, `/console/orders/${orderId}/deliver`, { ...reason, codes: 'HAND-1' }],
      ['viewer refund', v, `/console/orders/${orderId}/refund`, reason],
      ['viewer claim', v, '/console/redemptions/rdm_x/claim', {}],
      ['viewer retry', v, `/console/accounts/${accountId}/deliveries/del_x/retry`, reason],
      ['support adjust', a, `/console/accounts/${accountId}/adjust`, { ...reason, amount: '50.00' }],
      ['support revoke', a, `/console/accounts/${accountId}/keys/${keyId}/revoke`, reason],
      ['support invite', a, '/console/staff', { name: 'Mallory', email: 'mallory@example.com', role: 'admin' }],
    ];
    for (const [name, session, path, fields] of cases) {
      const res = await postFrom(session, '/console', path, fields);
      expect([name, res.status, res.text]).toEqual([name, 403, expect.stringContaining('Your role cannot do this')]);
    }
    for (const session of [v, a]) expect((await session.get('/console/audit')).status).toBe(403);
    expect((await auditRows(h, `details->>'email' = 'mallory@example.com'`)).length).toBe(0);
    await unchanged();
  });

  test("CSRF: a form without its token, or with another session's, is 403 and nothing changes", async () => {
    const a = await sessionOf(alice);
    const b = await sessionOf(bob);
    await a.get(`/console/orders/${orderId}`);
    await b.get(`/console/orders/${orderId}`);
    const fields = { reason: 'codes from the desk', codes: 'HAND-0001' };
    const missing = await a.post(`/console/orders/${orderId}/deliver`, fields, { csrf: false });
    const foreign = await a.post(`/console/orders/${orderId}/deliver`, { ...fields, _csrf: b.csrf! });
    for (const res of [missing, foreign])
      expect([res.status, res.text]).toEqual([403, expect.stringContaining('Nothing was changed')]);
    await unchanged();
  });

  test('hostile input on a console form is 400 before anything reads it, and nothing changes', async () => {
    const a = await sessionOf(alice);
    await a.get(`/console/orders/${orderId}`);
    const token = `_csrf=${encodeURIComponent(a.csrf!)}`;
    const cases: [string, string][] = [
      ['a NUL in the reason', `${token}&codes=HAND-1&reason=a%00b`],
      ['bytes that are not UTF-8', `${token}&codes=HAND-1&reason=%C3%28`],
      ['a control character in a code', `${token}&codes=HAND%07-1&reason=r`],
      ['a repeated field', `${token}&codes=HAND-1&reason=a&reason=b`],
    ];
    for (const [name, body] of cases) {
      const res = await a.request('POST', `/console/orders/${orderId}/deliver`, body, {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect([name, res.status]).toEqual([name, 400]);
    }
    await unchanged();
  });
});

test('support refunds from the console: the ledger, the order story and one audit row with name, reason and request id', async () => {
  const { api, accountId } = await reseller(h, '300.00');
  const orderId = await stuckOrder(api, 'prod_apple_gift_card_us_100', 3, 1, 'console-refund');
  const s = await sessionOf(alice);
  const queue = await s.get('/console');
  expect(queue.text).toMatch(
    new RegExp(
      `data-order-id="${orderId}"[\\s\\S]*?data-testid="workflow-state">needs_attention · \\d+ rounds · 2 missing`,
    ),
  );

  const res = await postFrom(s, `/console/orders/${orderId}`, `/console/orders/${orderId}/refund`, {
    reason: 'supplier out of stock for a week',
  });
  expect([res.status, res.location]).toEqual([303, `/console/orders/${orderId}?notice=refund`]);
  const requestId = res.headers.get('x-request-id');
  expect((await api.get(`/orders/${orderId}`)).body).toMatchObject({
    status: 'refunded',
    fulfillmentStatus: 'refunded',
  });
  const l = await expectLedgerMatchesBalance(h, accountId);
  expect(l.rows.map((r) => [r.type, r.amount, r.balance_after])).toEqual([
    ['adjust', '300.00', '300.00'],
    ['purchase', '-291.00', '9.00'],
    ['refund', '194.00', '203.00'],
  ]);
  expect(await supportActionsOf(h, orderId)).toEqual([
    expect.objectContaining({ action: 'refund', actor: alice.email, reason: 'supplier out of stock for a week' }),
  ]);
  expect(await actionRows(orderId)).toEqual([
    expect.objectContaining({
      actor: 'Alice Agent',
      actor_email: alice.email,
      role: 'support',
      action: 'order.refund',
      subject_id: orderId,
      account_id: accountId,
      reason: 'supplier out of stock for a week',
      request_id: requestId,
      outcome: 'ok',
    }),
  ]);

  const story = await s.get(`/console/orders/${orderId}?notice=refund`);
  expect(story.text).toContain('data-testid="order-status">refunded');
  expect(story.text).toContain(
    `href="http://127.0.0.1:${h.config.TEMPORAL_UI_PORT}/namespaces/default/workflows/procure%3A${orderId}"`,
  );
  expect(story.text).toContain(requestId!);
  expect(story.text).not.toContain('data-testid="refund"'); // nothing left to resolve
});

test('an admin adjusts a balance with a reason; a refused adjustment keeps its audit row with the outcome', async () => {
  const { accountId } = await reseller(h, '10.00');
  const s = await sessionOf(admin);
  const ok = await postFrom(s, `/console/accounts/${accountId}`, `/console/accounts/${accountId}/adjust`, {
    amount: '-2.50',
    reason: 'goodwill reversal',
  });
  expect(ok.status).toBe(303);
  const tooMuch = await postFrom(s, `/console/accounts/${accountId}`, `/console/accounts/${accountId}/adjust`, {
    amount: '-100.00',
    reason: 'typo',
  });
  expect([tooMuch.status, tooMuch.text]).toEqual([402, expect.stringContaining('data-testid="error"')]);
  const l = await expectLedgerMatchesBalance(h, accountId);
  expect(l.rows.map((r) => [r.type, r.amount, r.balance_after])).toEqual([
    ['adjust', '10.00', '10.00'],
    ['adjust', '-2.50', '7.50'],
  ]);
  const [note] = await h.services.orm.em
    .fork()
    .execute<{ note: string }[]>(`select note from ledger_transactions where account_id = ? and amount < 0`, [
      accountId,
    ]);
  expect(note.note).toBe('goodwill reversal');
  expect((await actionRows(accountId)).map((r) => [r.actor, r.action, r.reason, r.details.amount, r.outcome])).toEqual([
    ['Ada Admin', 'balance.adjust', 'goodwill reversal', '-2.50', 'ok'],
    ['Ada Admin', 'balance.adjust', 'typo', '-100.00', 'insufficient_balance'],
  ]);
  expect((await s.get(`/console/accounts/${accountId}`)).text).toContain('data-testid="balance">7.50 USDT');
});

test('markup in any field the console shows is escaped: account name, order id, reason, staff name, search', async () => {
  const MARK = `<img src=x onerror=alert(1)>"'&`;
  const ESCAPED = '&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;';
  const em = h.services.orm.em.fork();
  const { accountId, apiKey } = await createAccount(em, `acct ${MARK}`);
  await adjustBalance(em, { accountId, amount: '100.00', note: MARK, levelThresholds: h.config.LEVEL_THRESHOLDS });
  const api = client(h.apiUrl, apiKey);
  const orderId = await stuckOrder(api, 'prod_roblox_gift_card_us_10', 2, 1, `<b>"x'&</b>`);
  const marked = await staffMember(h, 'support', { name: MARK });
  const s = await signedIn(h, marked);
  expect(
    (await postFrom(s, `/console/orders/${orderId}`, `/console/orders/${orderId}/resume`, { reason: MARK })).status,
  ).toBe(303);
  const adminSession = await sessionOf(admin);
  const pages = [
    await s.get('/console'),
    await s.get(`/console/orders/${orderId}`),
    await s.get(`/console/accounts/${accountId}`),
    await s.get(`/console/search?q=${encodeURIComponent('<b>"x\'&</b>')}`),
    await s.get(`/console/search?q=${encodeURIComponent(MARK)}`),
    await adminSession.get(`/console/audit?id=${orderId}`),
    await adminSession.get('/console/staff'),
  ];
  for (const page of pages) {
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('<img src=x');
    expect(page.text).not.toContain('<b>"x');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
  }
  expect(pages[1].text).toContain('&lt;b&gt;&quot;x&#39;&amp;&lt;/b&gt;');
  for (const i of [1, 2, 4, 5, 6]) expect(pages[i].text).toContain(ESCAPED);
});

test('two agents claim one redemption: one wins; redeem details only on its claim page, never in lists, audit rows, logs or history', async () => {
  const logged: unknown[] = [];
  const spies = (['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const).map((level) =>
    jest.spyOn(h.services.logger, level).mockImplementation(((...args: unknown[]) => void logged.push(args)) as never),
  );
  try {
    const { api } = await reseller(h);
    const { code } = await buyCode(api, PW_PRODUCT);
    const email = `cq-${randomBytes(4).toString('hex')}@example.com`;
    const password = `Pw-${randomBytes(6).toString('hex')}!`;
    const submitted = await api.post('/redemptions', { code, redeemInfo: { email, password } });
    const { redemptionId } = submitted.body;
    await redemptionReaches(api, redemptionId, 'processing');
    const a = await sessionOf(alice);
    const b = await sessionOf(bob);
    await eventually(async () =>
      (await a.get('/console/redemptions')).text.includes(`data-redemption-id="${redemptionId}"`),
    );
    await b.get('/console/redemptions');

    const path = `/console/redemptions/${redemptionId}/claim`;
    const answers = await Promise.all([a.post(path), b.post(path)]);
    const won = answers.findIndex((r) => r.status === 200);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const [winner, loser] = won === 0 ? [alice, bob] : [bob, alice];
    expect(answers[won].text).toContain(email);
    expect(answers[won].text).toContain(password);
    expect(answers[1 - won].text).toContain(`claimed by ${winner.email}`);
    expect(answers[1 - won].text).not.toContain(password);

    const v = await sessionOf(viewer);
    const viewed = await v.get('/console/redemptions');
    expect(viewed.text).toContain(winner.email);
    expect(viewed.text).not.toContain('data-testid="claim"');
    const seen = [
      viewed,
      await a.get('/console/redemptions'),
      await a.get(`/console/search?q=${redemptionId}`),
      await (await sessionOf(admin)).get(`/console/audit?id=${redemptionId}`),
    ];
    for (const page of seen) for (const secret of [email, password]) expect(page.text).not.toContain(secret);
    expect(JSON.stringify(await auditRows(h, 'subject_id = ?', [redemptionId]))).not.toContain(password);

    const holder = won === 0 ? a : b;
    const fulfil = await holder.post(`/console/redemptions/${redemptionId}/fulfil`, {
      deliverable: 'Seat added; invite sent.',
      reason: 'added by hand',
    });
    expect([fulfil.status, fulfil.location]).toEqual([303, '/console/redemptions?notice=fulfilled']);
    expect(await redemptionReaches(api, redemptionId, 'fulfilled')).toMatchObject({
      deliverable: 'Seat added; invite sent.',
    });
    const rows = await auditRows(h, 'subject_id = ?', [redemptionId]);
    expect(rows.map((r) => [r.actor_email, r.action, r.outcome]).sort()).toEqual(
      [
        [loser.email, 'redemption.claim', 'claim_conflict'],
        [winner.email, 'redemption.claim', 'ok'],
        [winner.email, 'redemption.fulfil', 'ok'],
      ].sort(),
    );

    const history = await decodedHistoryText(
      h.services.temporal.client,
      h.config.TEMPORAL_PAYLOAD_KEYS,
      redemptionWorkflowId(redemptionId, 1),
    );
    for (const secret of [email, password]) {
      expect(history).not.toContain(secret);
      expect(JSON.stringify(logged)).not.toContain(secret);
    }
    expect(logged.length).toBeGreaterThan(0);
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
});

test('a disabled member is signed out at the next request', async () => {
  const m = await staffMember(h, 'viewer');
  const s = await signedIn(h, m);
  expect((await s.get('/console')).status).toBe(200);
  const adminSession = await sessionOf(admin);
  const res = await postFrom(adminSession, '/console/staff', `/console/staff/${m.id}/disable`, {
    reason: 'left the team',
  });
  expect(res.status).toBe(303);
  expect((await s.get('/console')).location).toBe('/console/sign-in?notice=session-ended');
  await roomInStep();
  expect((await signInWith(consoleSession(h), m, await freshCode(m))).status).toBe(401);
  expect(
    (await auditRows(h, `action = 'staff.disable' and subject_id = ?`, [m.id])).map((r) => [
      r.actor,
      r.reason,
      r.outcome,
    ]),
  ).toEqual([['Ada Admin', 'left the team', 'ok']]);
});
