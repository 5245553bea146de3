import { mnemonicToAccount } from 'viem/accounts';
import { depositAddress, receivingKey } from '../../src/providers/evm/addresses';
import { DEV_SECRETS } from '../../src/config';
import { OPERATOR_XPUB } from '../helpers/production';

// Issue 25: deposit addresses derive from the operator's xpub along m/44'/60'/0'/0/i, and are the
// addresses the operator's own wallet (which holds the seed) derives there, so it can sweep them.
// Checked against viem's derivation from the seed itself (private keys), a separate path.
const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';

test.each([
  ["an xpub at the account, m/44'/60'/0'", OPERATOR_XPUB],
  ["an xpub at m/44'/60'/0'/0", DEV_SECRETS.EVM_XPUB],
])("%s derives the wallet's own addresses", (_at, xpub) => {
  const key = receivingKey(xpub);
  for (const index of [0, 1, 2, 17, 1000]) {
    expect(depositAddress(key, index)).toBe(mnemonicToAccount(MNEMONIC, { addressIndex: index }).address);
  }
  expect(depositAddress(key, 0)).toBe('0x9858EfFD232B4033E47d90003D41EC34EcaEda94');
});

test('the derivation index stays in the non-hardened range', () => {
  const key = receivingKey(OPERATOR_XPUB);
  for (const bad of [-1, 2 ** 31, 1.5, Number.NaN]) expect(() => depositAddress(key, bad)).toThrow(/out of range/);
});
