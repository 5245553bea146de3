import type { LookupAddress } from 'node:dns';
import { ApiError } from '../../src/domain/errors';
import { checkWebhookUrl, classifyAddress, type AddressClass } from '../../src/domain/webhook-url';
import {
  sendWebhook,
  signBody,
  validateWebhookUrl,
  webhookBody,
  type Resolver,
} from '../../src/services/webhooks/webhook-sender';
import { backoffSeconds } from '../../src/contracts/webhooks-contract';
import { startReceiver, verifySignature, type Receiver } from '../helpers/webhook-receiver';

// Spec 4.5: PUT /webhook takes "a public https:// URL". Issue 5: reject what would let a caller
// reach inside the network (non-https, credentials, loopback, private, link-local, metadata),
// also by DNS name and again at delivery time; WEBHOOK_ALLOW_INSECURE_URLS admits http and loopback.
const strict = { allowInsecure: false };
const insecure = { allowInsecure: true };

describe('URL rules (pure)', () => {
  test.each([
    ['http://hooks.example.com/x', 'url must use https://'],
    ['ftp://hooks.example.com/x', 'url must use https://'],
    ['https://127.0.0.1/hook', 'url host is a loopback address'],
    ['https://10.0.0.1/hook', 'url host is a private network address'],
    ['https://169.254.169.254/latest/meta-data', 'url host is a cloud metadata address'],
    ['https://[::1]/hook', 'url host is a loopback address'],
    ['https://localhost/hook', 'url host is a loopback name'],
    ['https://api.localhost./hook', 'url host is a loopback name'],
    ['https://user:pass@hooks.example.com/x', 'url must not contain credentials'],
    ['https://token@hooks.example.com/x', 'url must not contain credentials'],
    ['https://172.16.5.4/', 'url host is a private network address'],
    ['https://192.168.1.10/', 'url host is a private network address'],
    ['https://100.64.0.1/', 'url host is a carrier-grade NAT address'],
    ['https://169.254.1.1/', 'url host is a link-local address'],
    ['https://0.0.0.0/', 'url host is an unspecified address'],
    ['https://0x7f.1/', 'url host is a loopback address'], // WHATWG normalizes odd IPv4 spellings
    ['https://2130706433/', 'url host is a loopback address'],
    ['https://[::ffff:127.0.0.1]/', 'url host is a loopback address'], // IPv4-mapped IPv6
    ['https://[::ffff:169.254.169.254]/', 'url host is a cloud metadata address'],
    ['https://[fe80::1]/', 'url host is a link-local address'],
    ['https://[fd00:ec2::254]/', 'url host is a cloud metadata address'],
    ['https://[fc00::5]/', 'url host is a private network address'],
    ['https://[64:ff9b::a00:1]/', 'url host is a private network address'], // NAT64 to 10.0.0.1
    ['not a url', 'url is not an absolute URL'],
    // Issue 11: the probe's accepted classes.
    ['https://[::ffff:0:127.0.0.1]/', 'url host is a loopback address'], // IPv4-translated ::ffff:0:0/96
    ['https://[::ffff:0:a00:1]/', 'url host is a private network address'],
    ['https://[::ffff:0:a9fe:a9fe]/', 'url host is a cloud metadata address'],
    ['https://168.63.129.16/', 'url host is a cloud metadata address'],
    ['https://hooks.example.com:0/', 'url must use the default https port (443)'],
    ['https://hooks.example.com:22/', 'url must use the default https port (443)'],
    ['https://Hooks.Example.COM:8443/a', 'url must use the default https port (443)'],
    ['https://8.8.8.8:6379/', 'url must use the default https port (443)'],
    [`https://a.example.com/${'x'.repeat(2100)}`, 'url must be at most 2048 characters'],
  ])('strict: %s is rejected (%s)', (url, reason) => {
    expect(checkWebhookUrl(url, strict)).toEqual({ ok: false, reason });
  });

  test.each([
    ['https://hooks.example.com/wholesale?x=1', 'https://hooks.example.com/wholesale?x=1'],
    ['https://Hooks.Example.COM:443/a', 'https://hooks.example.com/a'],
    ['https://8.8.8.8/hook', 'https://8.8.8.8/hook'],
    ['https://[2606:4700:4700::1111]/hook', 'https://[2606:4700:4700::1111]/hook'],
  ])('strict: %s is accepted', (url, href) => {
    expect(checkWebhookUrl(url, strict)).toMatchObject({ ok: true, href });
  });

  test.each([
    ['http://127.0.0.1:3000/hook', true],
    ['https://localhost:8443/hook', true],
    ['http://[::1]:3000/hook', true],
    ['http://10.0.0.1/hook', false], // the flag admits loopback, not the private network
    ['http://169.254.169.254/', false],
    ['http://user:pw@127.0.0.1:3000/hook', false],
  ])('WEBHOOK_ALLOW_INSECURE_URLS: %s accepted=%s', (url, ok) => {
    expect(checkWebhookUrl(url, insecure).ok).toBe(ok);
  });

  test.each<[string, AddressClass]>([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.10.10', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:8.8.8.8', 'public'],
    ['100.100.100.200', 'shared'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['203.0.113.7', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2002:7f00:1::1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['1::2::3', 'reserved'], // unparseable counts as not public
  ])('address %s is %s', (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
  });
});

describe('configuration-time check with DNS (PUT /webhook)', () => {
  const resolveTo =
    (...addresses: string[]): Resolver =>
    async () =>
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));

  test.each([
    ['a name resolving to loopback', resolveTo('127.0.0.1'), 'host resolves to a loopback address'],
    ['a name resolving to IPv6 loopback', resolveTo('::1'), 'host resolves to a loopback address'],
    [
      'a name resolving to the metadata service',
      resolveTo('169.254.169.254'),
      'host resolves to a cloud metadata address',
    ],
    [
      'a name with one private among public addresses',
      resolveTo('8.8.8.8', '10.0.0.8'),
      'host resolves to a private network address',
    ],
    [
      'a name that does not resolve',
      async () => Promise.reject(Object.assign(new Error('x'), { code: 'ENOTFOUND' })),
      'host does not resolve',
    ],
  ])('rejects %s with invalid_input', async (_name, resolver, reason) => {
    const err = await validateWebhookUrl('https://hooks.example.com/x', strict, resolver).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'invalid_input', message: `Invalid webhook url: ${reason}` });
  });

  test('accepts a name whose every address is public, returning the normalized URL', async () => {
    await expect(
      validateWebhookUrl('https://Hooks.Example.com/x', strict, resolveTo('8.8.8.8', '2606:4700::1')),
    ).resolves.toBe('https://hooks.example.com/x');
  });

  test('the system resolver: localhost is a loopback name, admitted only with the insecure flag', async () => {
    await expect(validateWebhookUrl('https://localhost/x', strict)).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(validateWebhookUrl('http://localhost:9/x', insecure)).resolves.toBe('http://localhost:9/x');
  });
});

describe('delivery-time guard against DNS rebinding (the connection uses only checked addresses)', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  const port = () => new URL(receiver.url).port;
  const request = (url: string) => ({
    url,
    secret: 'whsec_test',
    eventId: 'evt_1',
    deliveryId: 'whd_1.1',
    timestamp: 1,
    raw: '{"a":1}',
  });
  const rebinding =
    (address: string): Resolver =>
    async (host) => {
      expect(host).toBe('rebind.example.com');
      return [{ address, family: 4 }];
    };

  test('a name that now resolves to loopback is refused before connecting', async () => {
    const before = receiver.received.length;
    // Port 443 (the only one allowed in strict mode): nothing listens there, and nothing is tried.
    const r = await sendWebhook(request('https://rebind.example.com/hook'), {
      policy: strict,
      timeoutMs: 2000,
      resolver: rebinding('127.0.0.1'),
    });
    expect(r).toEqual({
      ok: false,
      statusCode: null,
      error: 'destination not allowed: host resolves to a loopback address',
    });
    expect(receiver.received.length).toBe(before);
  });

  test('a name that now resolves to a private address is refused even with the insecure flag', async () => {
    const r = await sendWebhook(request(`http://rebind.example.com:${port()}/hook`), {
      policy: insecure,
      timeoutMs: 2000,
      resolver: rebinding('10.0.0.1'),
    });
    expect(r.error).toBe('destination not allowed: host resolves to a private network address');
  });

  test('with the insecure flag the checked loopback address is the one connected to, signed over the raw body', async () => {
    receiver.script([204]);
    const r = await sendWebhook(request(`http://rebind.example.com:${port()}/hook`), {
      policy: insecure,
      timeoutMs: 2000,
      resolver: rebinding('127.0.0.1'),
    });
    expect(r).toEqual({ ok: true, statusCode: 204, error: null });
    const got = receiver.received.at(-1)!;
    expect(got.raw).toBe('{"a":1}');
    expect(verifySignature('whsec_test', got.raw, got.headers['x-wholesale-signature'])).toBe(true);
  });

  test('a stored URL that no longer passes the rules (flag turned off) is not called', async () => {
    const r = await sendWebhook(request(receiver.url), { policy: strict, timeoutMs: 2000 });
    expect(r).toEqual({ ok: false, statusCode: null, error: 'url not allowed: url must use https://' });
  });
});

describe('body, signature and backoff', () => {
  test('the envelope is merged flat with the payload and wins a name clash', () => {
    const { raw, timestamp } = webhookBody({
      id: 'evt_1',
      type: 'webhook.test',
      createdAt: new Date('2026-01-01T00:00:10.900Z'),
      payload: { message: 'hi', eventId: 'spoofed', timestamp: 0 },
    });
    expect(timestamp).toBe(Date.UTC(2026, 0, 1, 0, 0, 10) / 1000);
    expect(JSON.parse(raw)).toEqual({ eventId: 'evt_1', event: 'webhook.test', timestamp, message: 'hi' });
  });

  test('X-Wholesale-Signature is sha256= and the hex HMAC-SHA256 of the raw body', () => {
    // RFC 4231 test case 2.
    expect(signBody('Jefe', 'what do ya want for nothing?')).toBe(
      'sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  test.each([
    [1, 30, 21600, 30],
    [2, 30, 21600, 60],
    [5, 30, 21600, 480],
    [9, 30, 21600, 7680],
    [10, 30, 21600, 15360],
    [11, 30, 21600, 21600], // capped at 6 h
    [3, 1, 4, 4],
  ])('after failed attempt %i the wait is base %i doubling, capped at %i: %i s', (n, base, cap, wait) => {
    expect(backoffSeconds(n, base, cap)).toBe(wait);
  });
});
