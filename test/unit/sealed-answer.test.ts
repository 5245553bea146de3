import { AnswerKey, openSecrets, sealAnswer } from '../../src/temporal/sealed-answer';

// A placement's codes and checkout link come back to the asking API process sealed to its key
// (src/temporal/sealed-answer.ts): only that key opens them, only for that request, and nothing a
// forged or damaged message carries makes either side throw.
const secrets = { codes: ['ABCD-EFGH-JKLM', 'NPQR-STUV-WXYZ'], checkoutUrl: null };

test('what is sealed to a key for a request opens with that key for that request', () => {
  const key = AnswerKey.create();
  const sealed = sealAnswer(key.publicKey, 'placement-1', secrets)!;
  expect(sealed).toMatch(/^[A-Za-z0-9_-]+$/);
  expect(sealed).not.toContain('ABCD');
  expect(Buffer.from(sealed, 'base64url').toString('latin1')).not.toContain('ABCD');
  expect(key.open(sealed, 'placement-1')).toEqual(secrets);
});

test('a thousand long stock codes still travel sealed', () => {
  const key = AnswerKey.create();
  const many = {
    codes: Array.from({ length: 1000 }, (_, i) => `STOCK-${String(i).padStart(4, '0')}-${'X'.repeat(60)}`),
    checkoutUrl: null,
  };
  expect(openSecrets(key, sealAnswer(key.publicKey, 'p', many), 'p')).toEqual(many);
});

test('each seal is fresh: the same answer sealed twice shares no bytes past the version', () => {
  const key = AnswerKey.create();
  const a = Buffer.from(sealAnswer(key.publicKey, 'p', secrets)!, 'base64url');
  const b = Buffer.from(sealAnswer(key.publicKey, 'p', secrets)!, 'base64url');
  expect(a.subarray(1, 33).equals(b.subarray(1, 33))).toBe(false);
  expect(a.subarray(33).equals(b.subarray(33))).toBe(false);
});

test('another request, another key or one altered byte does not open', () => {
  const key = AnswerKey.create();
  const sealed = sealAnswer(key.publicKey, 'placement-1', secrets)!;
  expect(key.open(sealed, 'placement-2')).toBeUndefined();
  expect(AnswerKey.create().open(sealed, 'placement-1')).toBeUndefined();
  const bytes = Buffer.from(sealed, 'base64url');
  for (const at of [0, 1, 40, bytes.length - 20, bytes.length - 1]) {
    const altered = Buffer.from(bytes);
    altered[at] ^= 0x01;
    expect(key.open(altered.toString('base64url'), 'placement-1')).toBeUndefined();
  }
});

test.each<[string, unknown]>([
  ['nothing', undefined],
  ['a number', 42],
  ['an empty string', ''],
  ['too short', 'AQ'],
  ['not base64url', '!!!!'.repeat(30)],
  ['a wrong version', Buffer.alloc(80, 2).toString('base64url')],
  ['a zero ephemeral key', Buffer.concat([Buffer.of(1), Buffer.alloc(79)]).toString('base64url')],
  ['too long', 'A'.repeat(2 * 1024 * 1024 + 4)],
])('opening %s answers undefined, never throws', (_, sealed) => {
  expect(AnswerKey.create().open(sealed, 'p')).toBeUndefined();
});

test.each<[string, unknown]>([
  ['nothing', undefined],
  ['a number', 7],
  ['a short string', 'abc'],
  ['a key of 33 bytes', Buffer.alloc(33, 9).toString('base64url')],
  ['padding characters', `${'A'.repeat(42)}=`],
  ['a point of small order (zero)', Buffer.alloc(32).toString('base64url')],
])('sealing to %s answers undefined (the API then reads the secrets), never throws', (_, to) => {
  expect(sealAnswer(to, 'p', secrets)).toBeUndefined();
});

test.each<[string, unknown]>([
  ['codes that are not a list', { codes: 'ABCD', checkoutUrl: null }],
  ['a code that is not a string', { codes: [1], checkoutUrl: null }],
  ['a checkout link that is not a string', { codes: [], checkoutUrl: 5 }],
  ['no checkout link at all', { codes: [] }],
  ['not an object', ['ABCD']],
])('a seal that opens to %s is no answer: the API reads the secrets instead', (_, value) => {
  const key = AnswerKey.create();
  expect(openSecrets(key, sealAnswer(key.publicKey, 'p', value), 'p')).toBeUndefined();
});

test('secrets of the right shape open; without a key there is nothing to open', () => {
  const key = AnswerKey.create();
  const withLink = { codes: [], checkoutUrl: 'https://pay.example.com/checkout/chk_1' };
  expect(openSecrets(key, sealAnswer(key.publicKey, 'p', withLink), 'p')).toEqual(withLink);
  expect(openSecrets(undefined, sealAnswer(key.publicKey, 'p', withLink), 'p')).toBeUndefined();
});
