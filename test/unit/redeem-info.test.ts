import { ApiError } from '../../src/domain/errors';
import {
  displayFields,
  maskDeliverable,
  MASKED_SECRET,
  validateRedeemInfo,
  type RedeemFieldDef,
} from '../../src/domain/redeem-info';

// Spec 2.3 and 4.4: the one redeemInfo validation shared by POST /redemptions and the site.
const uuid = '3F2504E0-4F89-41D3-9A0C-0305E82C3301';
const session = (body: unknown) => JSON.stringify(body);
const F = {
  session: { key: 'session_user_id', label: 'Session', type: 'textarea', required: true },
  org: { key: 'account_id', label: 'Organization id', type: 'text', required: true },
  email: { key: 'email', label: 'Email', type: 'email', required: true },
  telegram: { key: 'telegram_username', label: 'Telegram username', type: 'text', required: true },
  password: { key: 'password', label: 'Password', type: 'password', required: true },
  note: { key: 'note', label: 'Note', type: 'text', required: false },
  plan: { key: 'plan', label: 'Plan', type: 'select', required: true, options: ['monthly', 'yearly'] },
} satisfies Record<string, RedeemFieldDef>;

function errorOf(fn: () => unknown): { code: string; details?: Record<string, unknown> } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, details: err.details };
    throw err;
  }
  throw new Error('expected an ApiError');
}

describe('accepted shapes and their normalized, stored values', () => {
  test.each<[string, RedeemFieldDef[], Record<string, string>, Record<string, string>]>([
    [
      'a session field given a UUID keeps it lowercased',
      [F.session],
      { session_user_id: ` ${uuid} ` },
      { session_user_id: uuid.toLowerCase() },
    ],
    [
      'a session field given an authenticated session JSON keeps only session.userId',
      [F.session],
      {
        session_user_id: session({
          status: 'authenticated',
          accessToken: 'eyJhbGciOi.secret.sig',
          session: { userId: 'user-AbC123_x' },
          user: { email: 'a@b.co' },
        }),
      },
      { session_user_id: 'user-AbC123_x' },
    ],
    [
      'a session JSON whose userId is a UUID is lowercased',
      [F.session],
      { session_user_id: session({ status: 'authenticated', session: { userId: uuid } }) },
      { session_user_id: uuid.toLowerCase() },
    ],
    [
      'an organization id UUID',
      [F.org, F.email],
      { account_id: uuid, email: 'Jane.Doe@Example.COM' },
      { account_id: uuid.toLowerCase(), email: 'Jane.Doe@example.com' },
    ],
    ['a Telegram username with @', [F.telegram], { telegram_username: '@Durov_42' }, { telegram_username: 'Durov_42' }],
    [
      'a Telegram username of 5 characters without @',
      [F.telegram],
      { telegram_username: 'abcde' },
      { telegram_username: 'abcde' },
    ],
    [
      'a Telegram username of 32 characters',
      [F.telegram],
      { telegram_username: `a${'b'.repeat(31)}` },
      { telegram_username: `a${'b'.repeat(31)}` },
    ],
    [
      'an optional field left empty is omitted',
      [F.email, F.note],
      { email: 'x@y.io', note: '  ' },
      { email: 'x@y.io' },
    ],
    ['a select value among its options', [F.plan], { plan: 'yearly' }, { plan: 'yearly' }],
    [
      'a password is never stored raw',
      [F.email, F.password],
      { email: 'x@y.io', password: ' hunter2 ' },
      { email: 'x@y.io', password: MASKED_SECRET },
    ],
    ['a product without fields accepts {}', [], {}, {}],
  ])('%s', (_name, fields, input, stored) => {
    expect(validateRedeemInfo(fields, input).stored).toEqual(stored);
  });

  test('password values are handed over separately (for the upstream) and exactly as typed', () => {
    expect(validateRedeemInfo([F.password], { password: ' hunter2 ' }).secrets).toEqual({ password: ' hunter2 ' });
  });

  test('the session user id is exposed for the session pre-check', () => {
    expect(validateRedeemInfo([F.session], { session_user_id: uuid }).sessionUserId).toBe(uuid.toLowerCase());
    expect(validateRedeemInfo([F.email], { email: 'x@y.io' }).sessionUserId).toBeUndefined();
  });
});

describe('rejections with the spec error codes', () => {
  test.each<[string, RedeemFieldDef[], unknown, string, string | undefined]>([
    ['a required field absent', [F.email], {}, 'missing_field', 'email'],
    ['a required field blank', [F.org, F.email], { account_id: uuid, email: '   ' }, 'missing_field', 'email'],
    [
      'the first problem in field order wins',
      [F.org, F.email],
      { account_id: 'nope' },
      'invalid_account_id',
      'account_id',
    ],
    ['an organization id that is not a UUID', [F.org], { account_id: 'org-123' }, 'invalid_account_id', 'account_id'],
    [
      'a session field with a bare non-UUID id',
      [F.session],
      { session_user_id: 'user-abc' },
      'invalid_session_json',
      'session_user_id',
    ],
    [
      'a session field with broken JSON',
      [F.session],
      { session_user_id: '{"status": "authenticated", ' },
      'invalid_session_json',
      'session_user_id',
    ],
    [
      'a session JSON that is not authenticated',
      [F.session],
      { session_user_id: session({ status: 'unauthenticated', session: { userId: 'user-1' } }) },
      'invalid_session_json',
      'session_user_id',
    ],
    [
      'a session JSON without session.userId',
      [F.session],
      { session_user_id: session({ status: 'authenticated', user: { id: 'user-1' } }) },
      'invalid_session_json',
      'session_user_id',
    ],
    [
      'a session JSON whose userId is not a string',
      [F.session],
      { session_user_id: session({ status: 'authenticated', session: { userId: 42 } }) },
      'invalid_session_json',
      'session_user_id',
    ],
    ['a session JSON array', [F.session], { session_user_id: '[1,2]' }, 'invalid_session_json', 'session_user_id'],
    [
      'a Telegram username that is too short',
      [F.telegram],
      { telegram_username: '@abcd' },
      'invalid_telegram_username',
      'telegram_username',
    ],
    [
      'a Telegram username of 33 characters',
      [F.telegram],
      { telegram_username: `a${'b'.repeat(32)}` },
      'invalid_telegram_username',
      'telegram_username',
    ],
    [
      'a Telegram username starting with a digit',
      [F.telegram],
      { telegram_username: '1abcde' },
      'invalid_telegram_username',
      'telegram_username',
    ],
    [
      'a Telegram username with a dash',
      [F.telegram],
      { telegram_username: 'abc-def' },
      'invalid_telegram_username',
      'telegram_username',
    ],
    ['an unknown key', [F.email], { email: 'x@y.io', coupon: 'FREE' }, 'invalid_input', 'coupon'],
    ['a non-string value', [F.email], { email: 42 }, 'invalid_input', 'email'],
    ['a null value', [F.email], { email: null }, 'invalid_input', 'email'],
    [
      'a nested object value',
      [F.session],
      { session_user_id: { status: 'authenticated' } },
      'invalid_input',
      'session_user_id',
    ],
    ['redeemInfo that is an array', [F.email], ['x@y.io'], 'invalid_input', undefined],
    ['redeemInfo that is a string', [F.email], 'x@y.io', 'invalid_input', undefined],
    ['a malformed email', [F.email], { email: 'not-an-email' }, 'invalid_input', 'email'],
    ['a select value outside its options', [F.plan], { plan: 'weekly' }, 'invalid_input', 'plan'],
    ['an over-long value', [F.note], { note: 'x'.repeat(2000) }, 'invalid_input', 'note'],
  ])('%s', (_name, fields, input, code, field) => {
    const err = errorOf(() => validateRedeemInfo(fields, input));
    expect(err.code).toBe(code);
    expect(err.details?.field).toBe(field);
  });

  test('error details never echo the submitted value', () => {
    const secretJson = session({ status: 'nope', accessToken: 'eyJsecret' });
    const err = errorOf(() => validateRedeemInfo([F.session], { session_user_id: secretJson }));
    expect(JSON.stringify(err)).not.toContain('eyJsecret');
  });
});

describe('labels for end customers (spec 2.1 redeemFieldsEn)', () => {
  test('English labels where a translation exists, the original otherwise', () => {
    const zh = [
      { ...F.org, label: '组织 ID' },
      { ...F.email, label: '邮箱' },
    ];
    expect(displayFields(zh, [{ ...F.org, label: 'Organization id' }]).map((f) => f.label)).toEqual([
      'Organization id',
      '邮箱',
    ]);
    expect(displayFields(zh, []).map((f) => f.label)).toEqual(['组织 ID', '邮箱']);
  });
});

describe('deliverable masking (spec 2.8: no raw data other than card codes)', () => {
  test.each<[string, string, string[], string[], string[]]>([
    [
      'submitted values are masked wherever they appear',
      'Activated for jane@example.com (org 3f2504e0-4f89-41d3-9a0c-0305e82c3301)',
      ['jane@example.com', '3f2504e0-4f89-41d3-9a0c-0305e82c3301'],
      ['jane@example.com', '3f2504e0-4f89-41d3-9a0c-0305e82c3301'],
      ['j***@example.com'],
    ],
    [
      'unknown e-mails and UUIDs echoed by the upstream are masked too',
      'Seat for bob@corp.io in 11111111-2222-3333-4444-555555555555',
      [],
      ['bob@corp.io', '11111111-2222-3333-4444-555555555555'],
      ['b***@corp.io', '1111****5555'],
    ],
    [
      'tokens are removed',
      'session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc and key sk_live_0123456789abcdefghijklmnopqrstuv',
      [],
      ['eyJhbGciOiJIUzI1NiJ9', 'sk_live_0123456789abcdefghijklmnopqrstuv'],
      ['[token]'],
    ],
    ['a Telegram username is masked', 'Premium applied to @durov_42', ['durov_42'], ['durov_42'], ['@du****42']],
    ['card codes stay readable', 'Your gift card: X7KQ-99PL-ZZ42', [], [], ['X7KQ-99PL-ZZ42']],
  ])('%s', (_name, text, sensitive, absent, present) => {
    const masked = maskDeliverable(text, sensitive);
    for (const a of absent) expect(masked).not.toContain(a);
    for (const p of present) expect(masked).toContain(p);
  });

  test('a long note is cut to a bounded length', () => {
    expect(maskDeliverable('ok '.repeat(1000)).length).toBeLessThanOrEqual(1000);
  });
});
