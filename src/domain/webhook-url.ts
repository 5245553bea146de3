// Which webhook URLs may be stored and called (spec 4.5: "a public https:// URL"). Pure rules
// only: the DNS step lives in src/services/webhooks/webhook-sender.ts and applies these same checks to
// every resolved address, at configuration time and again on each delivery (DNS rebinding).

export type AddressClass =
  'public' | 'loopback' | 'private' | 'link_local' | 'metadata' | 'unspecified' | 'shared' | 'multicast' | 'reserved';

export interface UrlPolicy {
  /** WEBHOOK_ALLOW_INSECURE_URLS: admits http:// and loopback, for local development and tests. */
  allowInsecure: boolean;
}

export type UrlCheck =
  { ok: true; url: URL; href: string; host: string; isIp: boolean } | { ok: false; reason: string };

export const MAX_WEBHOOK_URL_LENGTH = 2048;

const DESCRIBE: Record<Exclude<AddressClass, 'public'>, string> = {
  loopback: 'a loopback address',
  private: 'a private network address',
  link_local: 'a link-local address',
  metadata: 'a cloud metadata address',
  unspecified: 'an unspecified address',
  shared: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
};

export function describeAddressClass(c: AddressClass): string {
  return c === 'public' ? 'a public address' : DESCRIBE[c];
}

/** True when a webhook may be sent to an address of this class under the policy. */
export function addressAllowed(c: AddressClass, policy: UrlPolicy): boolean {
  return c === 'public' || (policy.allowInsecure && c === 'loopback');
}

/** Checks the URL itself: scheme, credentials, and the host when it is an IP literal or a localhost name. */
export function checkWebhookUrl(raw: string, policy: UrlPolicy): UrlCheck {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH)
    return { ok: false, reason: `url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'url is not an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(policy.allowInsecure && url.protocol === 'http:')) {
    return { ok: false, reason: 'url must use https://' };
  }
  if (url.username || url.password) return { ok: false, reason: 'url must not contain credentials' };
  // WHATWG drops the scheme's default port, so an https URL on 443 has none; a receiver on any
  // other port (22, 0, an internal admin port) is refused outside local development.
  if (url.port !== '' && !policy.allowInsecure)
    return { ok: false, reason: 'url must use the default https port (443)' };
  // WHATWG parsing already normalized odd IPv4 spellings (0x7f.1, 2130706433) to dotted quads.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname.replace(/\.$/, '').toLowerCase();
  if (!host) return { ok: false, reason: 'url must name a host' };
  const bytes = parseIp(host);
  if (bytes) {
    const c = classifyBytes(bytes);
    if (!addressAllowed(c, policy)) return { ok: false, reason: `url host is ${describeAddressClass(c)}` };
    return { ok: true, url, href: url.href, host, isIp: true };
  }
  if ((host === 'localhost' || host.endsWith('.localhost')) && !policy.allowInsecure) {
    return { ok: false, reason: 'url host is a loopback name' };
  }
  return { ok: true, url, href: url.href, host, isIp: false };
}

/** The class of an IPv4 or IPv6 address string (zone ids are ignored); `reserved` if it does not parse. */
export function classifyAddress(address: string): AddressClass {
  const bytes = parseIp(address);
  return bytes ? classifyBytes(bytes) : 'reserved';
}

function classifyBytes(b: number[]): AddressClass {
  return b.length === 4 ? classifyV4(b) : classifyV6(b);
}

type V4Rule = [prefix: number[], bits: number, cls: AddressClass];
const V4_RULES: V4Rule[] = [
  [[169, 254, 169, 254], 32, 'metadata'],
  [[168, 63, 129, 16], 32, 'metadata'], // Azure's host address (wire server, instance metadata)
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'shared'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link_local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'], // IETF assignments, incl. 192.0.0.192 (a cloud metadata address)
  [[192, 0, 2, 0], 24, 'reserved'], // documentation
  [[192, 88, 99, 0], 24, 'reserved'], // 6to4 relay anycast
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'], // benchmarking
  [[198, 51, 100, 0], 24, 'reserved'], // documentation
  [[203, 0, 113, 0], 24, 'reserved'], // documentation
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'], // incl. broadcast
];

function classifyV4(b: number[]): AddressClass {
  for (const [prefix, bits, cls] of V4_RULES) if (matches(b, prefix, bits)) return cls;
  return 'public';
}

type V6Rule = [prefix: number[], bits: number, cls: AddressClass | 'embedded'];
const v6 = (...words: number[]) =>
  words.flatMap((w) => [w >> 8, w & 0xff]).concat(new Array(16 - words.length * 2).fill(0));
const V6_RULES: V6Rule[] = [
  [v6(0, 0, 0, 0, 0, 0, 0, 0), 128, 'unspecified'],
  [v6(0, 0, 0, 0, 0, 0, 0, 1), 128, 'loopback'],
  [v6(0, 0, 0, 0, 0, 0xffff), 96, 'embedded'], // IPv4-mapped ::ffff:a.b.c.d
  [v6(0, 0, 0, 0, 0xffff, 0), 96, 'embedded'], // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765)
  [v6(0x64, 0xff9b), 96, 'embedded'], // NAT64 64:ff9b::a.b.c.d reaches the IPv4 address
  [v6(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254), 128, 'metadata'],
  [v6(0), 96, 'reserved'], // deprecated IPv4-compatible ::a.b.c.d and the rest of ::/96
  [v6(0x64, 0xff9b, 1), 48, 'reserved'], // local-use NAT64
  [v6(0x100), 64, 'reserved'], // discard-only
  [v6(0x2001, 0xdb8), 32, 'reserved'], // documentation
  [v6(0x2001), 23, 'reserved'], // IETF protocol assignments, incl. Teredo
  [v6(0x2002), 16, 'reserved'], // 6to4 tunnels to arbitrary IPv4 hosts
  [v6(0xfc00), 7, 'private'], // unique local
  [v6(0xfe80), 10, 'link_local'],
  [v6(0xfec0), 10, 'private'], // deprecated site-local
  [v6(0xff00), 8, 'multicast'],
];

function classifyV6(b: number[]): AddressClass {
  for (const [prefix, bits, cls] of V6_RULES) {
    if (!matches(b, prefix, bits)) continue;
    return cls === 'embedded' ? classifyV4(b.slice(12)) : cls;
  }
  return 'public';
}

function matches(bytes: number[], prefix: number[], bits: number): boolean {
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[i / 8] & mask) !== (prefix[i / 8] & mask)) return false;
  }
  return true;
}

/** Bytes of a dotted-quad IPv4 or an IPv6 address (4 or 16 of them), or undefined. */
export function parseIp(address: string): number[] | undefined {
  const s = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  return parseV4(s) ?? parseV6(s);
}

function parseV4(s: string): number[] | undefined {
  const parts = s.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p))) return undefined;
  const bytes = parts.map(Number);
  return bytes.every((n) => n <= 255) ? bytes : undefined;
}

function parseV6(input: string): number[] | undefined {
  if (!input.includes(':') || !/^[0-9a-fA-F:.]+$/.test(input)) return undefined;
  let s = input;
  // A trailing dotted quad (::ffff:127.0.0.1) becomes two hex words.
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const v4 = parseV4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    s = `${s.slice(0, lastColon + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const words = (part: string) => (part === '' ? [] : part.split(':'));
  const left = words(halves[0]);
  const right = halves.length === 2 ? words(halves[1]) : [];
  if (![...left, ...right].every((w) => /^[0-9a-fA-F]{1,4}$/.test(w))) return undefined;
  const given = left.length + right.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  const all = [...left, ...new Array<string>(8 - given).fill('0'), ...right].map((w) => parseInt(w, 16));
  return all.flatMap((w) => [w >> 8, w & 0xff]);
}
