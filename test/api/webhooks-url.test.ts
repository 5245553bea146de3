import { startHarness, type Harness } from '../helpers/harness';
import { client } from '../helpers/http';

// Spec 4.5 (PUT /webhook takes "a public https:// URL") and issue 5: with
// WEBHOOK_ALLOW_INSECURE_URLS off (the default), the real endpoint refuses every URL that would
// let a caller reach inside the network, stores nothing, and accepts a public https URL.
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

test('the insecure flag is off by default', () => {
  expect(h.config.WEBHOOK_ALLOW_INSECURE_URLS).toBe(false);
});

test.each([
  ['plain http', 'http://hooks.example.com/wholesale', 'url must use https://'],
  ['loopback IPv4', 'https://127.0.0.1/hook', 'url host is a loopback address'],
  ['a private network address', 'https://10.0.0.1/hook', 'url host is a private network address'],
  ['the cloud metadata address', 'https://169.254.169.254/latest/meta-data', 'url host is a cloud metadata address'],
  ['loopback IPv6', 'https://[::1]/hook', 'url host is a loopback address'],
  ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook', 'url host is a loopback address'],
  ['a name resolving to loopback', 'https://localhost/hook', 'url host is a loopback name'],
  ['a localhost subdomain', 'https://api.localhost/hook', 'url host is a loopback name'],
  ['credentials in the URL', 'https://user:pass@hooks.example.com/wholesale', 'url must not contain credentials'],
  ['a name that does not resolve', 'https://hooks.does-not-exist.invalid/wholesale', 'host does not resolve'],
])('PUT /webhook rejects %s with 400 invalid_input and stores nothing', async (_name, url, reason) => {
  const { apiKey } = await h.account();
  const api = client(h.apiUrl, apiKey);
  const res = await api.put('/webhook', { url });
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({
    error: 'invalid_input',
    message: `Invalid webhook url: ${reason}`,
    details: { field: 'url' },
  });
  expect((await api.get('/webhook')).body).toEqual({ url: '' });
  expect((await api.post('/webhook/test', {})).body.error).toBe('webhook_not_configured');
});

test('PUT /webhook accepts a public https URL and returns its signing secret once', async () => {
  const { apiKey } = await h.account();
  const api = client(h.apiUrl, apiKey);
  const res = await api.put('/webhook', { url: 'https://8.8.8.8/wholesale/hooks?src=test' });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    ok: true,
    url: 'https://8.8.8.8/wholesale/hooks?src=test',
    secret: expect.stringMatching(/^whsec_/),
  });
  expect((await api.get('/webhook')).body).toEqual({ url: 'https://8.8.8.8/wholesale/hooks?src=test' });
});
