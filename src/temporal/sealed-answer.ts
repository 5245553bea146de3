import { createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject } from 'node:crypto';
import type { SealedSecrets } from '../contracts/orders-contract';
import { gcmOpen, gcmSeal } from './codec';

// A placement's secrets (an order's codes, its checkout link) travel back to the API process that
// asked for them in the update's result, sealed to a key pair that process made at its start and
// holds in memory only. The history keeps the sealed bytes (under the payload codec as well),
// which no stored key opens: an operator decoding histories through the codec server sees none of
// them, and once the process has exited nobody can. The API process is spared reading them back.
//
// The seal: a fresh X25519 key per answer, its shared secret with the API's key through
// HKDF-SHA256 (salted with both public keys) into an AES-256-GCM key, the request's id bound in as
// associated data so one request's answer cannot stand for another's (the payload codec's
// AES-GCM). Not @hpke/core (RFC 9180): through WebCrypto each of its steps is a trip to the thread
// pool, and a seal or an open costs milliseconds, more than the Postgres read it saves.

const VERSION = 1;
const INFO = 'wholesale placement answer v1';
const KEY_BYTES = 32;
/** The payload codec's iv and tag around the ciphertext. */
const GCM_OVERHEAD = 12 + 16;
/** The longest sealed answer opened: Temporal's own limit on a payload (2 MB); 1,000 codes are far below it. */
const MAX_SEALED_CHARS = 2 * 1024 * 1024;

const rawOf = (key: KeyObject) => Buffer.from(key.export({ format: 'jwk' }).x as string, 'base64url');

/** The X25519 public key of 32 raw bytes in base64url, or undefined when it is not one. */
function publicKeyOf(encoded: unknown): { key: KeyObject; raw: Buffer } | undefined {
  if (typeof encoded !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(encoded)) return undefined;
  const raw = Buffer.from(encoded, 'base64url');
  if (raw.length !== KEY_BYTES) return undefined;
  try {
    return { key: createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: encoded }, format: 'jwk' }), raw };
  } catch {
    return undefined;
  }
}

const keyFor = (shared: Buffer, ephemeral: Buffer, recipient: Buffer) =>
  Buffer.from(hkdfSync('sha256', shared, Buffer.concat([ephemeral, recipient]), INFO, KEY_BYTES));

/**
 * `value` as JSON sealed to `recipient` (an `AnswerKey`'s `publicKey`) for the request `context`,
 * in base64url: version ‖ ephemeral public key ‖ iv ‖ ciphertext ‖ tag (gcmSeal). Undefined when `recipient`
 * is not a key: the answer then goes without its secrets and the API reads them.
 */
export function sealAnswer(recipient: unknown, context: string, value: unknown): string | undefined {
  const to = publicKeyOf(recipient);
  if (!to) return undefined;
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralRaw = rawOf(ephemeral.publicKey);
  let shared: Buffer;
  try {
    shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: to.key });
  } catch {
    return undefined; // a point of small order: no secret to share
  }
  const body = gcmSeal(keyFor(shared, ephemeralRaw, to.raw), context, JSON.stringify(value));
  return Buffer.concat([Buffer.of(VERSION), ephemeralRaw, body]).toString('base64url');
}

/** An API process's key pair for sealed answers: made at start, never stored, never sent but its public half. */
export class AnswerKey {
  private constructor(
    private readonly privateKey: KeyObject,
    private readonly raw: Buffer,
    /** What a placement request carries (`sealTo`). */
    readonly publicKey: string,
  ) {}

  static create(): AnswerKey {
    const { privateKey, publicKey } = generateKeyPairSync('x25519');
    const raw = rawOf(publicKey);
    return new AnswerKey(privateKey, raw, raw.toString('base64url'));
  }

  /** The value sealed to this key for `context`, or undefined when the bytes do not open under both. */
  open(sealed: unknown, context: string): unknown {
    if (typeof sealed !== 'string' || sealed.length > MAX_SEALED_CHARS) return undefined;
    const data = Buffer.from(sealed, 'base64url');
    if (data.length < 1 + KEY_BYTES + GCM_OVERHEAD || data[0] !== VERSION) return undefined;
    const ephemeral = publicKeyOf(data.subarray(1, 1 + KEY_BYTES).toString('base64url'));
    if (!ephemeral) return undefined;
    try {
      const shared = diffieHellman({ privateKey: this.privateKey, publicKey: ephemeral.key });
      const plain = gcmOpen(keyFor(shared, ephemeral.raw, this.raw), context, data.subarray(1 + KEY_BYTES));
      return JSON.parse(plain.toString('utf8')) as unknown;
    } catch {
      return undefined;
    }
  }
}

/** A placement's `SealedSecrets` opened with `key`, or undefined without a key, a seal that opens, or their shape. */
export function openSecrets(key: AnswerKey | undefined, sealed: unknown, context: string): SealedSecrets | undefined {
  const opened = key?.open(sealed, context);
  if (typeof opened !== 'object' || opened === null) return undefined;
  const { codes, checkoutUrl } = opened as Partial<SealedSecrets>;
  if (!Array.isArray(codes) || !codes.every((c) => typeof c === 'string')) return undefined;
  if (checkoutUrl !== null && typeof checkoutUrl !== 'string') return undefined;
  return { codes, checkoutUrl };
}
