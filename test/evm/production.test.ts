import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { evmEnv } from '../helpers/evm-checkout';
import { freePort, reseller, startHarness, type Harness } from '../helpers/harness';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { freshRateWindow } from '../helpers/redemption';
import { OPERATOR_XPUB, REAL_PROVIDERS } from '../helpers/production';

// Issue 25 item 1: production never runs a sandbox. Each outside party is chosen by config, a
// sandbox is refused at start naming the variable and its alternatives, and a production start on
// the EVM checkout serves no sandbox checkout, Pay button or /sandbox-pay.
const root = resolve(__dirname, '..', '..');
const SECRETS = {
  NODE_ENV: 'production',
  CURSOR_SECRET: 'a-real-cursor-secret',
  PAYMENT_CALLBACK_SECRET: 'a-real-callback-secret',
  TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
};

describe('configuration', () => {
  test.each([
    ['PAYMENT_PROVIDER', /PAYMENT_PROVIDER: the sandbox must not run in production .*set PAYMENT_PROVIDER to evm/],
    ['SUPPLIER_PROVIDER', /SUPPLIER_PROVIDER: the sandbox must not run in production .*set SUPPLIER_PROVIDER to none/],
    [
      'REDEMPTION_UPSTREAM',
      /REDEMPTION_UPSTREAM: the sandbox must not run in production .*set REDEMPTION_UPSTREAM to none/,
    ],
  ])('production with %s=sandbox is refused, naming the variable and its alternatives', (name, message) => {
    expect(() => loadConfig({ ...SECRETS, ...REAL_PROVIDERS, [name]: 'sandbox' })).toThrow(message);
    // The default is the sandbox: unset is refused the same way.
    expect(() => loadConfig({ ...SECRETS, ...REAL_PROVIDERS, [name]: undefined })).toThrow(message);
    expect(loadConfig({ ...REAL_PROVIDERS, [name]: undefined })[name as 'PAYMENT_PROVIDER']).toBe('sandbox');
  });

  test('production on the EVM checkout starts with an xpub and chains of its own', () => {
    const config = loadConfig({ ...SECRETS, ...REAL_PROVIDERS });
    expect(config.devSecrets).toEqual([]);
    expect(config.evmChains[0]).toMatchObject({ chainId: 137, confirmations: 12 });
    expect(() => loadConfig({ ...SECRETS, ...REAL_PROVIDERS, EVM_XPUB: undefined })).toThrow(
      /EVM_XPUB: the built-in development value/,
    );
    expect(() => loadConfig({ ...SECRETS, ...REAL_PROVIDERS, EVM_CHAINS: undefined })).toThrow(
      /EVM_CHAINS: required with PAYMENT_PROVIDER=evm/,
    );
  });

  test.each([
    ['not JSON', '{', /EVM_CHAINS: not valid JSON/],
    ['no chains', '[]', /EVM_CHAINS: at least one chain/],
    ['a chain twice', JSON.stringify([chainOf(), chainOf()]), /chain 137 is listed twice/],
    ['no token', JSON.stringify([{ ...chainOf(), tokens: {} }]), /at least one of USDT and USDC/],
    [
      'a bad token address',
      JSON.stringify([{ ...chainOf(), tokens: { USDT: { address: '0x123', decimals: 6 } } }]),
      /EVM_CHAINS\[0\]\.tokens\.USDT\.address: expected a 0x-prefixed 20-byte hex address/,
    ],
    ['no RPC URL', JSON.stringify([{ ...chainOf(), rpcUrls: [] }]), /at least one JSON-RPC URL/],
    ['an unknown field', JSON.stringify([{ ...chainOf(), confirmation: 3 }]), /confirmation/],
    [
      'neither confirmations nor finality',
      JSON.stringify([{ ...chainOf(), confirmations: undefined }]),
      /EVM_CHAINS\[0\]\.confirmations: required \(or "finality": "finalized"\)/,
    ],
    [
      'both confirmations and finality',
      JSON.stringify([{ ...chainOf(), finality: 'finalized' }]),
      /EVM_CHAINS\[0\]\.finality: either confirmations or "finality": "finalized", not both/,
    ],
    [
      'verifyWith one of its own rpcUrls',
      JSON.stringify([{ ...chainOf(), verifyWith: chainOf().rpcUrls[0] }]),
      /EVM_CHAINS\[0\]\.verifyWith: must be another node/,
    ],
  ])('EVM_CHAINS with %s is refused with a clear message that never quotes the URLs', (_case, raw, message) => {
    let error: Error | undefined;
    try {
      loadConfig({ ...REAL_PROVIDERS, EVM_CHAINS: raw });
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain('secret-key');
  });

  // Plain text can be read and changed on the way: a forged log or block hash would be a forged
  // deposit. A node on this host is reached over loopback; a transfer in its own block can be replaced.
  test.each([
    [
      'a plain http:// RPC URL to another host',
      { rpcUrls: ['https://rpc.invalid/secret-key', 'http://rpc.invalid/secret-key'] },
      /EVM_CHAINS\[0\]\.rpcUrls\[1\]: must be https:\/\/ or wss:\/\/ in production/,
    ],
    [
      'a plain ws:// RPC URL to another host',
      { rpcUrls: ['ws://10.0.0.7:8546/secret-key'] },
      /EVM_CHAINS\[0\]\.rpcUrls\[0\]: must be https:\/\/ or wss:\/\/ in production/,
    ],
    [
      'a plain http:// verifyWith',
      { verifyWith: 'http://other.invalid/secret-key' },
      /EVM_CHAINS\[0\]\.verifyWith: must be https:\/\/ or wss:\/\/ in production/,
    ],
    ['confirmations: 0', { confirmations: 0 }, /EVM_CHAINS\[0\]\.confirmations: must be at least 1 in production/],
  ])('production refuses %s, naming the setting and never quoting the URL', (_case, change, message) => {
    const raw = JSON.stringify([{ ...chainOf(), ...change }]);
    let error: Error | undefined;
    try {
      loadConfig({ ...SECRETS, ...REAL_PROVIDERS, EVM_CHAINS: raw });
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toMatch(/secret-key|rpc\.invalid|10\.0\.0\.7/);
    // Outside production the same chains are taken (a local node, a test chain).
    expect(loadConfig({ ...REAL_PROVIDERS, EVM_CHAINS: raw }).evmChains).toHaveLength(1);
  });

  test.each([
    [
      'https:// and wss:// URLs',
      { rpcUrls: ['https://rpc.invalid/key', 'wss://rpc.invalid/key'], verifyWith: 'https://other.invalid/key' },
    ],
    [
      'plain http:// to a node on this host',
      { rpcUrls: ['http://127.0.0.1:8545', 'http://localhost:8545', 'http://[::1]:8545'] },
    ],
    ['"finality": "finalized" instead of confirmations', { confirmations: undefined, finality: 'finalized' }],
  ])('production takes %s', (_case, change) => {
    const config = loadConfig({
      ...SECRETS,
      ...REAL_PROVIDERS,
      EVM_CHAINS: JSON.stringify([{ ...chainOf(), ...change }]),
    });
    expect(config.evmChains[0]).toMatchObject(JSON.parse(JSON.stringify(change)));
  });

  test('an extended private key is refused: the service never holds a key that can spend', () => {
    const xprv =
      'xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi';
    expect(() => loadConfig({ ...REAL_PROVIDERS, EVM_XPUB: xprv })).toThrow(
      /EVM_XPUB: this is an extended private key/,
    );
    expect(() => loadConfig({ ...REAL_PROVIDERS, EVM_XPUB: 'xpub-nonsense' })).toThrow(
      /EVM_XPUB: not a valid BIP32 extended public key/,
    );
    expect(() => loadConfig({ ...REAL_PROVIDERS, EVM_XPUB: OPERATOR_XPUB })).not.toThrow();
  });
});

function chainOf() {
  return {
    chainId: 137,
    name: 'Polygon',
    rpcUrls: ['https://user:secret-key@rpc.invalid/secret-key'],
    confirmations: 12,
    tokens: { USDT: { address: `0x${'ab'.repeat(20)}`, decimals: 6 } },
  };
}

test('`npm run api` in production with the sandbox payment provider exits 1 naming PAYMENT_PROVIDER, before connecting to anything', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/api.ts'], {
    cwd: root,
    env: {
      ...process.env,
      ...SECRETS,
      ...REAL_PROVIDERS,
      PAYMENT_PROVIDER: 'sandbox',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  const code = await new Promise<number | null>((r) => child.once('close', r));
  expect(code).toBe(1);
  expect(out).toContain('PAYMENT_PROVIDER: the sandbox must not run in production');
}, 60_000);

describe('a production start on the EVM checkout', () => {
  let chain: DevChain;
  let h: Harness;
  let metricsPort: number;
  beforeAll(async () => {
    chain = await startDevChain();
    metricsPort = await freePort();
    h = await startHarness({
      ...evmEnv(chain),
      ...SECRETS,
      TEMPORAL_PAYLOAD_KEYS: process.env.TEMPORAL_PAYLOAD_KEYS!,
      EVM_XPUB: OPERATOR_XPUB,
      SUPPLIER_PROVIDER: 'none',
      REDEMPTION_UPSTREAM: 'none',
      METRICS_PORT: String(metricsPort),
      CHECKOUT_RATE_LIMIT_PER_MINUTE: '4',
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
    await chain?.stop();
  });

  test('serves no /sandbox-pay, no Pay button and no Pay action: opening the checkout credits nothing', async () => {
    expect(h.config.NODE_ENV).toBe('production');
    const { api, accountId } = await reseller(h);
    const sandboxApi = await fetch(`${h.baseUrl}/sandbox-pay/v1/checkouts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.config.PAYMENT_CALLBACK_SECRET}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        reference: 'x',
        amount: '500.00',
        currency: 'USDT',
        description: 'x',
        callbackUrl: 'http://127.0.0.1:1/',
      }),
    });
    expect(sandboxApi.status).toBe(404);

    const topup = await api.post('/topup', {
      externalTopupId: `prod-${randomBytes(3).toString('hex')}`,
      amount: '500.00',
      currency: 'USDT',
    });
    expect(topup.status).toBe(200);
    const page = await fetch(topup.body.checkoutUrl);
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).not.toMatch(/data-testid="pay"|\/pay"|Sandbox/);
    for (const action of ['pay', 'abandon']) {
      const res = await fetch(`${topup.body.checkoutUrl}/${action}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: '',
      });
      expect(res.status).toBe(404);
    }
    // A callback in the sandbox's form is not a payment either.
    const callback = await fetch(`${h.baseUrl}/payments/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(callback.status).toBe(401);
    expect((await api.get('/balance')).body.balance).toBe('0.00');
    expect((await expectLedgerMatchesBalance(h, accountId)).rows).toEqual([]);
  });

  test("a checkout link's page and status JSON share a budget per client IP: then 429 with Retry-After, the error body for JSON, a page for people", async () => {
    const { api } = await reseller(h);
    const topup = await api.post('/topup', {
      externalTopupId: `limit-${randomBytes(3).toString('hex')}`,
      amount: '30.00',
      currency: 'USDT',
    });
    await freshRateWindow(60, 20);
    const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
    for (let i = 0; i < 3; i++)
      expect((await fetch(`${topup.body.checkoutUrl}/status.json`, from('192.0.2.77'))).status).toBe(200);
    expect((await fetch(topup.body.checkoutUrl, from('192.0.2.77'))).status).toBe(200);
    const json = await fetch(`${topup.body.checkoutUrl}/status.json`, from('192.0.2.77'));
    expect([json.status, Number(json.headers.get('retry-after')) > 0, json.headers.get('content-type')]).toEqual([
      429,
      true,
      expect.stringMatching(/^application\/json/),
    ]);
    expect(await json.json()).toEqual({
      error: 'rate_limited',
      message: expect.any(String),
      retryable: true,
      requestId: json.headers.get('x-request-id'),
    });
    const page = await fetch(topup.body.checkoutUrl, from('192.0.2.77'));
    expect([page.status, Number(page.headers.get('retry-after')) > 0, await page.text()]).toEqual([
      429,
      true,
      expect.stringContaining('Too many requests'),
    ]);
    // Another payer is not held back by this one.
    expect((await fetch(`${topup.body.checkoutUrl}/status.json`, from('192.0.2.78'))).status).toBe(200);
  });

  test('serves /metrics only on METRICS_PORT, never on the public API port', async () => {
    expect((await fetch(`${h.baseUrl}/metrics`)).status).toBe(404);
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect([metrics.status, await metrics.text()]).toEqual([
      200,
      expect.stringContaining('wholesale_http_requests_total'),
    ]);
  });
});
