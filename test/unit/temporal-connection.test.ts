import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import {
  isLoopbackAddress,
  temporalConnectionOptions,
  temporalConnectionProblems,
} from '../../src/temporal/connection';
import { REAL_PROVIDERS } from '../helpers/production';

// Temporal as a secured dependency (docs/configuration.md, TEMPORAL_TLS_*): how the config reaches
// Temporal, and production's refusal of plaintext to a frontend off this machine. The connection
// itself, over mTLS to the production server, is test/api/temporal-tls.test.ts.
const dir = mkdtempSync(join(tmpdir(), 'temporal-connection-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const CA = file('ca.pem', '-----BEGIN CERTIFICATE-----\nY2E=\n-----END CERTIFICATE-----\n');
const CERT = file('client.pem', '-----BEGIN CERTIFICATE-----\nY2xpZW50\n-----END CERTIFICATE-----\n');
const KEY = file('client.key', '-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n');
const NOT_PEM = file('secret.txt', 'hunter2-the-secret-inside\n');

const PRODUCTION = {
  NODE_ENV: 'production',
  CURSOR_SECRET: 'a-real-cursor-secret',
  PAYMENT_CALLBACK_SECRET: 'a-real-callback-secret',
  TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
  ...REAL_PROVIDERS,
};
/** A config as parsed outside production, then given env's NODE_ENV: to ask the Temporal rules alone. */
const settings = (env: Record<string, string>) => ({
  ...loadConfig({ ...env, NODE_ENV: undefined }),
  NODE_ENV: env.NODE_ENV,
});

test.each([
  ['127.0.0.1:7233', true],
  ['127.8.9.10:7233', true],
  ['localhost:7233', true],
  ['LOCALHOST', true],
  ['[::1]:7233', true],
  ['::1', true],
  ['[0:0:0:0:0:0:0:1]:7233', true],
  ['temporal:7233', false],
  ['10.0.0.5:7233', false],
  ['128.0.0.1:7233', false],
  ['[::2]:7233', false],
  ['localhost.example.com:7233', false],
  ['127.0.0.1.nip.io:7233', false],
  ['ns.tmprl.cloud:7233', false],
])('loopback is 127.0.0.0/8, ::1 and localhost: %s → %s', (address, loopback) => {
  expect(isLoopbackAddress(address)).toBe(loopback);
});

describe('production refuses plaintext to a Temporal off this machine', () => {
  test('a plaintext TEMPORAL_ADDRESS off this machine stops start-up, naming TEMPORAL_ADDRESS and TEMPORAL_ALLOW_PLAINTEXT', () => {
    expect(() => loadConfig({ ...PRODUCTION, TEMPORAL_ADDRESS: 'temporal.internal:7233' })).toThrow(
      /TEMPORAL_ADDRESS: plaintext to a Temporal frontend off this machine is refused in production;[^\n]*TEMPORAL_ALLOW_PLAINTEXT=true/,
    );
    expect(() =>
      loadConfig({ ...PRODUCTION, TEMPORAL_ADDRESS: '10.1.2.3:7233', TEMPORAL_ALLOW_PLAINTEXT: 'false' }),
    ).toThrow(/TEMPORAL_ADDRESS: plaintext/);
  });

  test.each([
    [
      'TLS with a private CA and a client pair',
      { TEMPORAL_TLS_CA: CA, TEMPORAL_TLS_CERT: CERT, TEMPORAL_TLS_KEY: KEY },
    ],
    ['TLS with the system roots', { TEMPORAL_TLS: 'true' }],
    ["Temporal Cloud's API key", { TEMPORAL_API_KEY: 'tc-api-key' }],
    ['plaintext the operator allows (a private network)', { TEMPORAL_ALLOW_PLAINTEXT: 'true' }],
  ])('%s is accepted', (_name, env) => {
    expect(
      temporalConnectionProblems(
        settings({ ...env, NODE_ENV: 'production', TEMPORAL_ADDRESS: 'temporal.internal:7233' }),
      ),
    ).toEqual([]);
  });

  test.each([['127.0.0.1:7233'], ['localhost:7233'], ['[::1]:7233']])(
    'plaintext to %s (this machine) is accepted',
    (address) => {
      expect(temporalConnectionProblems(settings({ NODE_ENV: 'production', TEMPORAL_ADDRESS: address }))).toEqual([]);
    },
  );

  test('outside production plaintext anywhere is accepted (development, tests)', () => {
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }).TEMPORAL_ADDRESS).toBe('temporal:7233');
  });
});

describe('certificate files are config: named by their variable, never shown', () => {
  const refusal = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };

  test.each([
    ['a certificate without its key', { TEMPORAL_TLS_CERT: CERT }, /TEMPORAL_TLS_KEY: required with TEMPORAL_TLS_CERT/],
    ['a key without its certificate', { TEMPORAL_TLS_KEY: KEY }, /TEMPORAL_TLS_CERT: required with TEMPORAL_TLS_KEY/],
    [
      'a CA file that is not there',
      { TEMPORAL_TLS_CA: join(dir, 'missing.pem') },
      /TEMPORAL_TLS_CA: cannot read the file it names \(ENOENT\)/,
    ],
    [
      'a certificate path that is a folder',
      { TEMPORAL_TLS_CERT: dir, TEMPORAL_TLS_KEY: KEY },
      /TEMPORAL_TLS_CERT: cannot read the file it names \(EISDIR\)/,
    ],
    [
      'a key file that holds no PEM key',
      { TEMPORAL_TLS_CERT: CERT, TEMPORAL_TLS_KEY: NOT_PEM },
      /TEMPORAL_TLS_KEY: the file it names holds no PEM private key/,
    ],
    [
      'a CA file that holds no PEM certificate',
      { TEMPORAL_TLS_CA: NOT_PEM },
      /TEMPORAL_TLS_CA: the file it names holds no PEM certificate/,
    ],
  ])('%s stops start-up naming the variable, not what the file holds', (_name, env, message) => {
    expect(refusal(env)).toMatch(message);
    expect(refusal(env)).not.toContain('hunter2');
  });

  test('the connection options carry the files read, the server name and the API key; TLS is on with any of them', () => {
    const mtls = temporalConnectionOptions(
      settings({
        TEMPORAL_ADDRESS: 't:7233',
        TEMPORAL_TLS_CA: CA,
        TEMPORAL_TLS_CERT: CERT,
        TEMPORAL_TLS_KEY: KEY,
        TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      }),
    );
    expect(mtls).toEqual({
      address: 't:7233',
      tls: {
        serverNameOverride: 'temporal.internal',
        serverRootCACertificate: expect.any(Buffer),
        clientCertPair: { crt: expect.any(Buffer), key: expect.any(Buffer) },
      },
    });
    expect(mtls.tls!.clientCertPair!.key.toString()).toContain('BEGIN PRIVATE KEY');
    expect(
      temporalConnectionOptions(
        settings({ TEMPORAL_ADDRESS: 'ns.a1b2c.tmprl.cloud:7233', TEMPORAL_API_KEY: 'tc-api-key' }),
      ),
    ).toEqual({ address: 'ns.a1b2c.tmprl.cloud:7233', tls: {}, apiKey: 'tc-api-key' });
    expect(temporalConnectionOptions(settings({ TEMPORAL_TLS: 'true' }))).toEqual({
      address: '127.0.0.1:7233',
      tls: {},
    });
    expect(temporalConnectionOptions(settings({}), '127.0.0.1:7999')).toEqual({ address: '127.0.0.1:7999' });
  });
});
