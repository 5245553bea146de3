import { ConfigError, loadConfig } from '../../src/config';
import { REAL_PROVIDERS } from '../helpers/production';

// What production refuses to expose (README, Configuration): /metrics on the public port (it needs
// METRICS_PORT), and plain http to or from anything but this host; each refusal names its variable
// and never quotes the URL. And TRUST_PROXY, which decides whose address every per-IP budget counts.
const PRODUCTION = {
  ...REAL_PROVIDERS,
  NODE_ENV: 'production',
  CURSOR_SECRET: 'a-real-cursor-secret',
  TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 5).toString('base64')}`,
};

function problem(env: Record<string, string | undefined>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('production exposure', () => {
  test('a production config of its own starts', () => {
    expect(loadConfig(PRODUCTION)).toMatchObject({ METRICS_PORT: 9464, TRUST_PROXY: ['loopback'] });
  });

  test('without METRICS_PORT production is refused, naming it', () => {
    expect(problem({ ...PRODUCTION, METRICS_PORT: undefined })).toMatch(
      /^ {2}METRICS_PORT: required in production: \/metrics, \/healthz and \/readyz are served on their own port/m,
    );
    // Outside production the API port keeps serving /metrics when there is no METRICS_PORT.
    expect(loadConfig({}).METRICS_PORT).toBeUndefined();
  });

  test.each(['RELOADLY_AUTH_URL', 'RELOADLY_API_URL', 'PAYMENT_PROVIDER_URL', 'PUBLIC_BASE_URL', 'TEMPORAL_UI_ORIGIN'])(
    'an http:// %s is refused in production with a message naming the variable; https:// and loopback http:// are taken',
    (name) => {
      const message = problem({ ...PRODUCTION, [name]: 'http://partner.example/path-with-secret-key' });
      expect(message).toMatch(
        new RegExp(`^ {2}${name}: must be https:// in production \\(plain http only to a loopback address\\)$`, 'm'),
      );
      expect(message).not.toContain('secret-key');
      for (const ok of [
        'https://partner.example/x',
        'http://127.0.0.1:9000',
        'http://localhost:9000',
        'http://[::1]:9000',
      ]) {
        expect(() => loadConfig({ ...PRODUCTION, [name]: ok })).not.toThrow();
      }
      // Development keeps plain http anywhere (a local fake, a test).
      expect(() => loadConfig({ [name]: 'http://partner.example' })).not.toThrow();
    },
  );

  test('an http:// Reloadly URL is refused with SUPPLIER_PROVIDER=reloadly in production', () => {
    const reloadly = {
      ...PRODUCTION,
      SUPPLIER_PROVIDER: 'reloadly',
      RELOADLY_ENV: 'live',
      RELOADLY_CLIENT_ID: 'id',
      RELOADLY_CLIENT_SECRET: 'secret',
      RELOADLY_PRODUCTS: JSON.stringify({ prod_apple_gift_card_us_10: { productId: 5, unitPrice: 10 } }),
    };
    expect(loadConfig(reloadly).SUPPLIER_PROVIDER).toBe('reloadly');
    expect(problem({ ...reloadly, RELOADLY_AUTH_URL: 'http://auth.reloadly.example' })).toMatch(
      /RELOADLY_AUTH_URL: must be https:\/\//,
    );
    expect(problem({ ...reloadly, RELOADLY_API_URL: 'http://giftcards.reloadly.example' })).toMatch(
      /RELOADLY_API_URL: must be https:\/\//,
    );
  });

  test('links handed out from a public HOST need PUBLIC_BASE_URL in production', () => {
    expect(problem({ ...PRODUCTION, HOST: '0.0.0.0' })).toMatch(
      /PUBLIC_BASE_URL: required in production when HOST is not loopback/,
    );
    expect(
      loadConfig({ ...PRODUCTION, HOST: '0.0.0.0', PUBLIC_BASE_URL: 'https://wholesale.example' }).publicBaseUrl,
    ).toBe('https://wholesale.example');
  });
});

describe('TRUST_PROXY', () => {
  test.each<[string, unknown]>([
    ['loopback', ['loopback']],
    ['1', 1],
    ['0', 0],
    ['10.0.0.0/8, 192.168.1.7,loopback', ['10.0.0.0/8', '192.168.1.7', 'loopback']],
    ['2001:db8::/32,uniquelocal,linklocal', ['2001:db8::/32', 'uniquelocal', 'linklocal']],
  ])('%s is taken', (raw, value) => {
    expect(loadConfig({ TRUST_PROXY: raw }).TRUST_PROXY).toEqual(value);
  });

  test('defaults to loopback (a proxy on this host)', () => {
    expect(loadConfig({}).TRUST_PROXY).toEqual(['loopback']);
  });

  test.each(['everyone', '10.0.0.0/33', '300.1.1.1', '10.0.0.1/8/2', '11', ',', 'true'])(
    '%s is refused, naming TRUST_PROXY',
    (raw) => {
      expect(problem({ TRUST_PROXY: raw })).toMatch(/TRUST_PROXY: (expected a hop count|a hop count is at most 10)/);
    },
  );
});
