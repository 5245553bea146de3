import fc from 'fast-check';

// Generators of what a buggy client, a fuzzer or an attacker sends (issue 11 item 7): valid values
// mixed with lone surrogates, NUL and control characters, very long strings, deep nesting, wrong
// types, prototype keys, odd numbers, invalid JSON, wrong content types and empty bodies.

/** Cases per endpoint: 300 in CI; FUZZ_RUNS raises it for a local soak (e.g. 10000). */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 300);

/** fast-check's settings for every property; a failure prints its seed and path to replay. */
export const fuzzParams = (extra: fc.Parameters<unknown> = {}): fc.Parameters<unknown> => ({
  numRuns: FUZZ_RUNS,
  ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
  ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}),
  endOnFailure: true,
  ...extra,
});

const NASTY = [
  '\ud800',
  '\udfff',
  'a\ud83dz',
  'x\u0000y',
  '\u0000',
  '\u0007',
  '\u001b[31mred',
  '\u007f',
  '\r\n',
  '\t',
  '',
  ' ',
  '\ufeff',
  '\u202e',
  '😀',
  '../../etc/passwd',
  '%00',
  '%ED%A0%80',
  "'; drop table orders;--",
  '<script>alert(1)</script>',
  '${7*7}',
  '{{7*7}}',
  'null',
  'true',
  '1e2',
  '-0',
  'NaN',
  '__proto__',
  'constructor',
];

/** Any single UTF-16 code unit, lone surrogates and controls included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...NASTY),
  fc.string({ unit: codeUnit, maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc
    .tuple(fc.constantFrom('x', 'A', '\u0000', '\ud800', 'é'), fc.integer({ min: 65, max: 70_000 }))
    .map(([c, n]) => c.repeat(n)),
);

export const oddNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(1e308, -1e308, -0, 0.001, 0, -1, 1, 2, 1000, 1001, 2 ** 53 + 1, 1.5, Number.MAX_SAFE_INTEGER),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** A JSON value of any type, nested a little. */
export const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    oddNumber,
    hostileString,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.array(fc.tuple(hostileKey(), tie('value')), { maxLength: 3 }).map(rawObject),
  ),
})).value;

function hostileKey(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'a', ''),
    hostileString.filter((s) => s.length < 100),
  );
}

/** An object literal holding exactly these keys (even `__proto__`), as JSON would parse it. */
export function rawObject(entries: [string, unknown][]): unknown {
  return JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`);
}

/** A field that is usually valid, sometimes hostile, sometimes any type at all. */
const mutated = (valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 2, arbitrary: hostileString },
    { weight: 1, arbitrary: oddNumber },
    { weight: 1, arbitrary: anyJson },
  );

/** A request body: a JSON object of fields (with extra or missing ones), or something that is not. */
export interface BodyCase {
  contentType: string | undefined;
  raw: string | undefined;
}

const OMIT = Symbol('omit');
const serialize = (entries: [string, unknown][]) =>
  `{${entries
    .filter(([, v]) => v !== OMIT)
    .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`)
    .join(',')}}`;

/**
 * The text of a JSON object for an endpoint whose fields are valid when drawn from `fields`
 * (those named in `optional` may be left out): a third are wholly valid, so the run reaches the
 * workflows and the database; the rest mutate fields, drop them or add hostile ones.
 */
export function jsonObject(
  fields: Record<string, fc.Arbitrary<unknown>>,
  optional: string[] = [],
): fc.Arbitrary<string> {
  const names = Object.keys(fields);
  const maybe = (name: string, arb: fc.Arbitrary<unknown>) =>
    optional.includes(name) ? fc.oneof(arb, fc.constant<unknown>(OMIT)) : arb;
  const valid = fc
    .tuple(...names.map((n) => maybe(n, fields[n]).map((v) => [n, v] as [string, unknown])))
    .map(serialize);
  const field = (n: string) =>
    fc
      .oneof(
        { weight: 9, arbitrary: maybe(n, mutated(fields[n])) },
        { weight: 1, arbitrary: fc.constant<unknown>(OMIT) },
      )
      .map((v) => [n, v] as [string, unknown]);
  const extra = fc.oneof(
    { weight: 7, arbitrary: fc.constant<[string, unknown][]>([]) },
    { weight: 3, arbitrary: fc.array(fc.tuple(hostileKey(), anyJson), { minLength: 1, maxLength: 2 }) },
  );
  const broken = fc.tuple(fc.tuple(...names.map(field)), extra).map(([known, more]) => serialize([...known, ...more]));
  return fc.oneof({ weight: 1, arbitrary: valid }, { weight: 2, arbitrary: broken });
}

/** JSON texts that are not the object an endpoint wants, or not JSON at all. */
export const notAnObject: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    '{"a":',
    'null',
    '[]',
    '"x"',
    '1e308',
    '{"a":1}}',
    'undefined',
    '\u0000',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
  ),
  fc.integer({ min: 100, max: 20_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 100, max: 20_000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  fc.constant(`{"pad":"${'x'.repeat(300 * 1024)}"}`), // over the 256 kB body limit
  anyJson.map((v) => JSON.stringify(v) ?? 'null'),
);

/** Request bodies: mostly JSON objects as above, sometimes not, with right and wrong content types. */
export function body(fields: Record<string, fc.Arbitrary<unknown>>, optional: string[] = []): fc.Arbitrary<BodyCase> {
  const object = jsonObject(fields, optional);
  const contentType = fc.oneof(
    { weight: 8, arbitrary: fc.constant<string | undefined>('application/json') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/json; charset=latin1',
        'multipart/form-data',
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  return fc.record({
    contentType,
    raw: fc.oneof(
      { weight: 8, arbitrary: object },
      { weight: 1, arbitrary: notAnObject },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
  });
}

/**
 * A path segment or query value as a client would percent-encode it; a lone surrogate has no
 * UTF-8 form and goes out as its CESU-8 bytes (ED A0 80), as a sloppy client sends it.
 */
export function percent(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    out +=
      cp >= 0xd800 && cp <= 0xdfff
        ? `%${[0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)].map((b) => b.toString(16).toUpperCase()).join('%')}`
        : encodeURIComponent(ch);
  }
  return out;
}

/** A path id: one that exists, one of another account, an unknown one, or a hostile one. */
export const pathId = (known: string[]): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...known) },
    { weight: 4, arbitrary: hostileString.filter((s) => s.length < 9000) },
  );

/** A query string built from optional params, with duplicated and bracketed keys now and then. */
export function query(params: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string> {
  const parts = Object.entries(params).map(([k, arb]) =>
    fc.option(
      fc.tuple(arb, fc.constantFrom('plain', 'plain', 'plain', 'twice', 'bracket')).map(([v, shape]) => {
        const value = percent(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
        if (shape === 'twice') return `${k}=${value}&${k}=${value}`;
        if (shape === 'bracket') return `${k}[x]=${value}`;
        return `${k}=${value}`;
      }),
      { freq: 3 },
    ),
  );
  return fc.tuple(...parts).map((ps) => {
    const present = ps.filter(Boolean);
    return present.length ? `?${present.join('&')}` : '';
  });
}
