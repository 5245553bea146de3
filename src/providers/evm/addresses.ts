import { HDKey } from '@scure/bip32';
import { secp256k1 } from '@noble/curves/secp256k1';
import { bytesToHex } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { tronAddress } from './tron';

// Deposit addresses: one per checkout, derived from the operator's extended public key along
// BIP44's Ethereum path m/44'/60'/0'/0/i (TRON's: coin type 195, TRON_XPUB, the same index). The service can watch them and never spend from them;
// the operator's own wallet, which holds the seed, derives the same addresses and sweeps them.

/**
 * The key that derives the receiving addresses: EVM_XPUB exported at m/44'/60'/0'/0 (depth 4,
 * the addresses are its children) or at the account m/44'/60'/0' (depth 3, they are 0/i); for
 * TRON (coin type 195) TRON_XPUB at m/44'/195'/0'/0 or m/44'/195'/0'. An xpub does not carry its
 * path, only its depth: the operator's wallet shows the same addresses only if it was exported
 * there. Throws with a message fit for a config error (never quoting the key).
 */
export function receivingKey(xpub: string, coinType: 60 | 195 = 60): HDKey {
  let key: HDKey;
  try {
    key = HDKey.fromExtendedKey(xpub.trim());
  } catch {
    throw new Error('not a valid BIP32 extended public key (xpub…)');
  }
  if (key.privateKey)
    throw new Error(
      'this is an extended private key: give the service the xpub only, it never holds a key that can spend',
    );
  if (key.depth === 4) return key;
  if (key.depth === 3) return key.deriveChild(0);
  throw new Error(
    `expected an xpub at m/44'/${coinType}'/0'/0 (depth 4) or m/44'/${coinType}'/0' (depth 3), got depth ${key.depth}`,
  );
}

/** The checksummed address at index `index` under the receiving key. */
export function depositAddress(key: HDKey, index: number): `0x${string}` {
  if (!Number.isInteger(index) || index < 0 || index >= 2 ** 31) throw new Error('derivation index out of range');
  const child = key.deriveChild(index);
  if (!child.publicKey) throw new Error('derivation gave no public key');
  const uncompressed = secp256k1.ProjectivePoint.fromHex(child.publicKey).toRawBytes(false);
  return publicKeyToAddress(bytesToHex(uncompressed));
}

/** The T… address at `index` under a TRON receiving key (TRON_XPUB): the same key's 20 bytes, in Base58Check. */
export function tronDepositAddress(key: HDKey, index: number): string {
  return tronAddress(depositAddress(key, index));
}
