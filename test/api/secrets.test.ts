import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { DEV_SECRETS, loadConfig } from '../../src/config';
import { REAL_PROVIDERS } from '../helpers/production';

// Issue 11 item 5: the built-in development secrets are refused in production, by name; in
// development they are reported (never their values).
const root = resolve(__dirname, '..', '..');

describe('loadConfig', () => {
  test('NODE_ENV=production with any built-in secret stops start-up naming each variable', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /CURSOR_SECRET[\s\S]*PAYMENT_CALLBACK_SECRET[\s\S]*TEMPORAL_PAYLOAD_KEYS/,
    );
    expect(() => loadConfig({ NODE_ENV: 'production', CURSOR_SECRET: 'a-real-cursor-secret' })).toThrow(
      /PAYMENT_CALLBACK_SECRET/,
    );
    // Spelling the development value out is no better than leaving it unset.
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        PAYMENT_CALLBACK_SECRET: 'a-real-callback-secret',
        CURSOR_SECRET: DEV_SECRETS.CURSOR_SECRET,
      }),
    ).toThrow(/CURSOR_SECRET: the built-in development value/);
  });

  test('production with secrets of its own starts; development lists the built-in ones it uses', () => {
    // Issue 12: production also needs payload encryption keys of its own.
    // Issue 25: and no sandbox for any outside party.
    const own = {
      NODE_ENV: 'production',
      CURSOR_SECRET: 'a-real-cursor-secret',
      PAYMENT_CALLBACK_SECRET: 'a-real-callback-secret',
      ...REAL_PROVIDERS,
    };
    expect(() => loadConfig(own)).toThrow(/TEMPORAL_PAYLOAD_KEYS: the built-in development value/);
    const prod = loadConfig({ ...own, TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}` });
    expect(prod.devSecrets).toEqual([]);
    expect(loadConfig({}).devSecrets).toEqual(['CURSOR_SECRET', 'PAYMENT_CALLBACK_SECRET', 'TEMPORAL_PAYLOAD_KEYS']);
    expect(JSON.stringify(loadConfig({}).devSecrets)).not.toContain(DEV_SECRETS.CURSOR_SECRET);
  });
});

test.each(['api', 'worker'])(
  '`npm run %s` with NODE_ENV=production and no secrets exits 1 naming them, before connecting to anything',
  async (role) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `src/${role}.ts`], {
      cwd: root,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        CURSOR_SECRET: '',
        PAYMENT_CALLBACK_SECRET: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += String(d)));
    child.stderr!.on('data', (d) => (out += String(d)));
    const code = await new Promise<number | null>((r) => child.once('close', r));
    expect(code).toBe(1);
    expect(out).toContain('CURSOR_SECRET: the built-in development value must not be used in production');
    expect(out).toContain('PAYMENT_CALLBACK_SECRET: the built-in development value must not be used in production');
    expect(out).not.toContain(DEV_SECRETS.PAYMENT_CALLBACK_SECRET);
  },
  60_000,
);
