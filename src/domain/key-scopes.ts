import { parseIp } from './webhook-url';

// What an API key may do and where it may be used from. A key made without limits may do
// everything from anywhere, as every key could before scopes existed; limits only ever take away.

/** `read`: every GET but the webhook's, and POST /exports (it writes down what a GET lists); the others: the operations that act. */
export const KEY_SCOPES = ['read', 'orders', 'topups', 'redemptions', 'webhooks'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

export const isKeyScope = (s: string): s is KeyScope => (KEY_SCOPES as readonly string[]).includes(s);

/** More networks than this on one key is a list to keep in a firewall, not on a key. */
export const MAX_KEY_CIDRS = 20;

interface Network {
  bytes: number[];
  bits: number;
}

/** An address as 4 bytes (IPv4, including IPv4-mapped IPv6 `::ffff:a.b.c.d`) or 16 (IPv6). */
function addressBytes(address: string): number[] | undefined {
  const bytes = parseIp(address);
  if (bytes?.length === 16 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return bytes.slice(12);
  return bytes;
}

/** `203.0.113.0/24` or `2001:db8::/32`; host bits may be set (the prefix decides). */
export function parseCidr(text: string): Network | undefined {
  const m = /^([0-9A-Fa-f.:]+)\/(\d{1,3})$/.exec(text.trim());
  if (!m) return undefined;
  const bytes = parseIp(m[1]);
  const bits = Number(m[2]);
  if (!bytes || bits > bytes.length * 8) return undefined;
  return { bytes, bits };
}

function contains(network: Network, address: number[]): boolean {
  if (network.bytes.length !== address.length) return false;
  for (let i = 0; i < network.bits; i += 8) {
    const take = Math.min(8, network.bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((network.bytes[i / 8] & mask) !== (address[i / 8] & mask)) return false;
  }
  return true;
}

/** Whether `address` lies in one of the key's networks; an address that does not parse lies in none. */
export function addressAllowedByCidrs(cidrs: readonly string[], address: string | undefined): boolean {
  const bytes = address ? addressBytes(address) : undefined;
  if (!bytes) return false;
  return cidrs.some((c) => {
    const network = parseCidr(c);
    return network !== undefined && contains(network, bytes);
  });
}
