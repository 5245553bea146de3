import { mnemonicToAccount } from 'viem/accounts';
import { DEV_SECRETS, loadConfig } from '../../src/config';
import { depositAddress, receivingKey, tronDepositAddress } from '../../src/providers/evm/addresses';
import { parseChains } from '../../src/providers/evm/evm-settings';
import { isTronAddress, tronAddress, tronAddressToHex } from '../../src/providers/evm/tron';
import { REAL_PROVIDERS } from '../helpers/production';

// Issue 38: TRON deposit addresses derive from TRON_XPUB along m/44'/195'/0'/0/i (BIP44 coin type
// 195, as TronLink and Ledger use) and show as Base58Check T… addresses.
const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
/** The same test mnemonic's xpub at m/44'/195'/0'/0 (depth 4): an operator's, not the built-in one (depth 3). */
const OPERATOR_TRON_XPUB =
  'xpub6EuK4CZWW5urEHdwAVDdDw327danAtccFcrXYvgf1DHrPXRwErt36xStQ2PNhn4hpwzPbzJ8pJVpewgChRnSs59q5Ay61GCfQZKUe71gbLq';

test.each([
  ["the account, m/44'/195'/0'", DEV_SECRETS.TRON_XPUB],
  ["m/44'/195'/0'/0", OPERATOR_TRON_XPUB],
])("an xpub at %s derives the TRON wallet's own addresses", (_at, xpub) => {
  const key = receivingKey(xpub, 195);
  // The widely published vector for the BIP39 test mnemonic ("abandon … about", no passphrase) at
  // m/44'/195'/0'/0/0, the first address a TRON wallet restored from it shows.
  expect(tronDepositAddress(key, 0)).toBe('TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH');
  // A second path to the same keys: viem derives the private key from the seed itself; its EVM
  // address is the same 20 bytes, which Base58Check turns into the T… address.
  for (const index of [0, 1, 2, 17, 1000]) {
    // viem's types expect coin type 60; the derivation itself takes any path.
    const fromSeed = mnemonicToAccount(MNEMONIC, { path: `m/44'/195'/0'/0/${index}` as `m/44'/60'/${string}` }).address;
    expect(tronDepositAddress(key, index)).toBe(tronAddress(fromSeed));
    expect(depositAddress(key, index)).toBe(fromSeed);
  }
});

test('the USDT contract on TRON: T… and the hex its log filters take are the same 20 bytes', () => {
  // TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t is 41a614f803b6fd780986a42c78ec9c7f77e6ded13c (Tronscan's
  // contract page shows both; widely quoted in TRON code, e.g. as TRON_MAINNET_USDT.hex41).
  expect(tronAddressToHex('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t')).toBe('0xa614f803b6fd780986a42c78ec9c7f77e6ded13c');
  expect(tronAddress('0xa614f803b6fd780986a42c78ec9c7f77e6ded13c')).toBe('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t');
});

test('T… round-trips through hex for any 20 bytes, and upper-case hex gives the same address', () => {
  for (let i = 0; i < 50; i++) {
    const hex = `0x${Array.from({ length: 20 }, () =>
      Math.floor(Math.random() * 256)
        .toString(16)
        .padStart(2, '0'),
    ).join('')}` as `0x${string}`;
    const t = tronAddress(hex);
    expect(t).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
    expect(tronAddressToHex(t)).toBe(hex);
    expect(tronAddress(hex.toUpperCase().replace('0X', '0x') as `0x${string}`)).toBe(t);
  }
});

test('a mistyped T… address is refused: wrong checksum, wrong prefix, not Base58', () => {
  const good = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
  const typo = `${good.slice(0, 10)}${good[10] === 'a' ? 'b' : 'a'}${good.slice(11)}`;
  expect(() => tronAddressToHex(typo)).toThrow(/checksum is wrong/);
  expect(isTronAddress(typo)).toBe(false);
  expect(() => tronAddressToHex('0xa614f803b6fd780986a42c78ec9c7f77e6ded13c')).toThrow(/not a TRON address/);
  // A Bitcoin address is valid Base58Check but not 0x41 ‖ 20 bytes.
  expect(() => tronAddressToHex('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')).toThrow(/21 bytes starting with 0x41/);
});

const tronChain = (change: Record<string, unknown> = {}) => ({
  kind: 'tron',
  chainId: 728126428,
  name: 'TRON',
  rpcUrls: ['https://api.trongrid.io/jsonrpc'],
  apiKey: 'a-trongrid-key',
  tokens: { USDT: { address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', decimals: 6 } },
  ...change,
});

describe('a TRON chain in EVM_CHAINS', () => {
  test('takes its USDT contract as T…, turned into hex, and counts by finality unless told a depth', () => {
    const parsed = parseChains(JSON.stringify([tronChain()]));
    expect(parsed).toEqual({
      chains: [
        expect.objectContaining({
          kind: 'tron',
          finality: 'finalized',
          apiKey: 'a-trongrid-key',
          tokens: { USDT: { address: '0xa614f803b6fd780986a42c78ec9c7f77e6ded13c', decimals: 6 } },
        }),
      ],
    });
    const byDepth = parseChains(JSON.stringify([tronChain({ confirmations: 20 })]));
    expect('chains' in byDepth && byDepth.chains[0]).toMatchObject({ confirmations: 20 });
    expect('chains' in byDepth && byDepth.chains[0].finality).toBeUndefined();
  });

  test.each([
    [
      'a contract whose checksum is wrong',
      { tokens: { USDT: { address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6T', decimals: 6 } } },
      /EVM_CHAINS\[0\]\.tokens\.USDT\.address: expected the contract's T… address on a TRON chain: not a TRON address: its Base58Check checksum is wrong/,
    ],
    [
      'a contract in hex',
      { tokens: { USDT: { address: '0xa614f803b6fd780986a42c78ec9c7f77e6ded13c', decimals: 6 } } },
      /EVM_CHAINS\[0\]\.tokens\.USDT\.address: expected the contract's T… address/,
    ],
    [
      'an API key on an EVM chain',
      { kind: 'evm', confirmations: 12, tokens: { USDT: { address: `0x${'ab'.repeat(20)}`, decimals: 6 } } },
      /EVM_CHAINS\[0\]\.apiKey: only for "kind": "tron"/,
    ],
    ['an unknown kind', { kind: 'solana' }, /EVM_CHAINS\[0\]\.kind/],
  ])('with %s is refused, naming the setting', (_case, change, message) => {
    const parsed = parseChains(JSON.stringify([tronChain(change)]));
    expect('errors' in parsed && parsed.errors.join('\n')).toMatch(message);
    expect(JSON.stringify(parsed)).not.toContain('a-trongrid-key');
  });

  test('needs TRON_XPUB: an xprv is refused, and the built-in one in production', () => {
    const env = { ...REAL_PROVIDERS, EVM_CHAINS: JSON.stringify([tronChain()]) };
    const xprv =
      'xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi';
    expect(() => loadConfig({ ...env, TRON_XPUB: xprv })).toThrow(/TRON_XPUB: this is an extended private key/);
    expect(() => loadConfig({ ...env, TRON_XPUB: 'xpub-nonsense' })).toThrow(
      /TRON_XPUB: not a valid BIP32 extended public key/,
    );
    expect(loadConfig(env).devSecrets).toContain('TRON_XPUB');
    // Without a TRON chain its built-in value is not in use.
    expect(loadConfig(REAL_PROVIDERS).devSecrets).not.toContain('TRON_XPUB');
    const production = {
      ...env,
      NODE_ENV: 'production',
      CURSOR_SECRET: 'a-real-cursor-secret',
      TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
    };
    expect(() => loadConfig(production)).toThrow(
      /TRON_XPUB: the built-in development value must not be used in production/,
    );
    expect(loadConfig({ ...production, TRON_XPUB: OPERATOR_TRON_XPUB }).evmChains[0]).toMatchObject({
      kind: 'tron',
      finality: 'finalized',
    });
  });
});
