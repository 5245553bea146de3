import { randomBytes } from 'node:crypto';
import { EncryptionCodec, parseKeyRing } from '../../src/temporal/codec';
import { startHarness, type Harness } from '../helpers/harness';

// Issue 27 item 3: the codec server tells the operator. A payload no key of the ring opens is
// answered as before (shown as it is, so the UI still renders) with response headers saying how
// many and which key ids, counted in a metric, and logged once per key id per minute, not once per
// request: an operator paging through a history with a missing key gets one line, not hundreds.
const KEY = `live:${randomBytes(32).toString('base64')}`;
const CODEC_TOKEN = `codec-${randomBytes(12).toString('hex')}`;
const UI_ORIGIN = 'http://127.0.0.1:18234';
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ TEMPORAL_PAYLOAD_KEYS: KEY, CODEC_TOKEN, TEMPORAL_UI_ORIGIN: UI_ORIGIN }, { worker: false });
});
afterAll(() => h?.stop());
afterEach(() => jest.restoreAllMocks());

type JsonPayload = { metadata: Record<string, string>; data: string };

async function sealed(keys: string, value: unknown): Promise<JsonPayload> {
  const [p] = await new EncryptionCodec(parseKeyRing(keys)).encode([
    { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(value)) },
  ]);
  return {
    metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
    data: Buffer.from(p.data!).toString('base64'),
  };
}
const lostKey = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

async function decode(payloads: JsonPayload[], headers: Record<string, string> = {}) {
  const res = await fetch(`${h.baseUrl}/codec/decode`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-namespace': 'default',
      authorization: `Bearer ${CODEC_TOKEN}`,
      ...headers,
    },
    body: JSON.stringify({ payloads }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { payloads: JsonPayload[] } };
}

async function unopenedCounter(): Promise<number> {
  const text = await fetch(`${h.baseUrl}/metrics`).then((r) => r.text());
  return Number(/^wholesale_codec_unopened_payloads_total(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? 0);
}

const warnings = (spy: jest.SpyInstance) =>
  spy.mock.calls
    .filter(([, msg]) => typeof msg === 'string' && msg.startsWith('codec: no configured key opens'))
    .map(([fields]) => fields.keyIds);

test('unopened payloads: shown as they are, named in the headers, counted, and one warning per key id per minute', async () => {
  const warn = jest.spyOn(h.services.logger, 'warn');
  const gone = await sealed(lostKey('gone-2025'), 'unreadable');
  const fine = await sealed(KEY, 'readable');
  const before = await unopenedCounter();

  const first = await decode([gone, gone, fine]);
  expect(first.status).toBe(200);
  expect(first.body.payloads.slice(0, 2)).toEqual([gone, gone]);
  expect(JSON.parse(Buffer.from(first.body.payloads[2].data, 'base64').toString())).toBe('readable');
  expect(first.headers.get('x-codec-unopened')).toBe('2');
  expect(first.headers.get('x-codec-unopened-key-ids')).toBe('gone-2025');
  expect(await unopenedCounter()).toBe(before + 2);
  expect(warnings(warn)).toEqual([['gone-2025']]);

  // The next pages of the same history within the minute: told in the answer and counted, not logged.
  for (let page = 0; page < 5; page++)
    expect((await decode([gone])).headers.get('x-codec-unopened-key-ids')).toBe('gone-2025');
  expect(await unopenedCounter()).toBe(before + 7);
  expect(warnings(warn)).toEqual([['gone-2025']]);

  // Another missing key is news: its line names it alone.
  const other = await decode([gone, await sealed(lostKey('older'), 'x')]);
  expect(other.headers.get('x-codec-unopened-key-ids')).toBe('gone-2025,older');
  expect(warnings(warn)).toEqual([['gone-2025'], ['older']]);

  // A minute later the operator is told again.
  const now = Date.now();
  jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
  await decode([gone]);
  expect(warnings(warn)).toEqual([['gone-2025'], ['older'], ['gone-2025']]);
});

test('a payload every key opens carries no such header; the UI origin may read the headers (CORS exposes them)', async () => {
  const ok = await decode([await sealed(KEY, 'fine')], { origin: UI_ORIGIN });
  expect(ok.headers.get('x-codec-unopened')).toBeNull();
  const cross = await decode([await sealed(lostKey('gone-ui'), 'x')], { origin: UI_ORIGIN });
  expect(cross.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
  expect(cross.headers.get('access-control-expose-headers')?.toLowerCase().split(/,\s*/)).toEqual([
    'x-codec-unopened',
    'x-codec-unopened-key-ids',
  ]);
  expect(cross.headers.get('x-codec-unopened')).toBe('1');
});
