import { createHash } from 'node:crypto';
import { base58check } from '@scure/base';

// TRON's addresses: the same secp256k1 keys and the same 20 bytes as an EVM address of the key,
// shown as Base58Check of 0x41 ‖ those bytes (double SHA-256, 4-byte checksum), 34 characters
// starting with T. The chain reads (java-tron's JSON-RPC) take the 20 bytes in hex; payers and
// wallets see T… only. Deposit keys derive along BIP44 coin type 195, m/44'/195'/0'/0/i.

const b58 = base58check((data: Uint8Array) => new Uint8Array(createHash('sha256').update(data).digest()));
const PREFIX = 0x41;

/** The address shown to a payer, for the 20-byte hex form the chain's filters use. */
export function tronAddress(hex: `0x${string}`): string {
  if (!/^0x[0-9a-fA-F]{40}$/.test(hex)) throw new Error('expected a 20-byte hex address');
  const bytes = new Uint8Array(21);
  bytes[0] = PREFIX;
  for (let i = 0; i < 20; i++) bytes[i + 1] = parseInt(hex.slice(2 + 2 * i, 4 + 2 * i), 16);
  return b58.encode(bytes);
}

/**
 * The 20-byte hex (lowercase) of a T… address. Throws, with a message fit for a config error,
 * when it is not Base58Check, its checksum is wrong (a mistyped character), or it is not a TRON
 * mainnet-style address (0x41, 21 bytes).
 */
export function tronAddressToHex(address: string): `0x${string}` {
  let bytes: Uint8Array;
  try {
    bytes = b58.decode(address.trim());
  } catch (err) {
    const checksum = /checksum/i.test((err as Error).message);
    throw new Error(
      checksum
        ? 'not a TRON address: its Base58Check checksum is wrong (a mistyped or missing character)'
        : 'not a TRON address (expected Base58Check, T…)',
      { cause: err },
    );
  }
  if (bytes.length !== 21 || bytes[0] !== PREFIX)
    throw new Error('not a TRON address (expected 21 bytes starting with 0x41, shown as T…)');
  return `0x${Array.from(bytes.subarray(1), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** True for a well-formed T… address (checksum included). */
export function isTronAddress(address: string): boolean {
  try {
    tronAddressToHex(address);
    return true;
  } catch {
    return false;
  }
}
