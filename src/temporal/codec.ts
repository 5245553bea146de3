import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { refusedValue } from '../contracts/refused-payload';

// Every payload that leaves a process of the service (workflow inputs and results, activity
// arguments and results, local-activity markers, update arguments and outcomes, signals, failure
// messages and stacks) is encrypted with AES-256-GCM before it reaches the Temporal server, so
// its database, its backups and an unauthenticated Web UI hold ciphertext. Operators read them
// decoded through the codec server (src/http/routers/codec-router.ts).

/** Marks an encrypted payload; anything else passes as it is, except to a worker (see CodecOptions). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface KeyRing {
  /** The key that encrypts; the first of TEMPORAL_PAYLOAD_KEYS. */
  current: { id: string; key: Buffer };
  /** Every key that still decrypts (rotated-out keys included). */
  byId: Map<string, Buffer>;
}

/** Parses `id:base64key,id2:base64key` (each key 32 bytes); the first encrypts, all decrypt. */
export function parseKeyRing(spec: string): KeyRing {
  const byId = new Map<string, Buffer>();
  const entries = spec
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const split = entry.indexOf(':');
    const id = entry.slice(0, split);
    const key = Buffer.from(entry.slice(split + 1), 'base64');
    if (split < 1 || !/^[A-Za-z0-9._-]{1,64}$/.test(id))
      throw new Error(`a key id must be 1 to 64 letters, digits, '.', '_' or '-' (got "${id.slice(0, 20)}")`);
    if (key.length !== 32) throw new Error(`key "${id}" must be 32 bytes in base64 (got ${key.length})`);
    if (byId.has(id)) throw new Error(`key id "${id}" appears twice`);
    byId.set(id, key);
  }
  if (entries.length === 0) throw new Error('at least one key is needed');
  const [id, key] = byId.entries().next().value as [string, Buffer];
  return { current: { id, key }, byId };
}

/** A fresh key ring entry, `id:base64key`. */
export const newKeySpec = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

const text = new TextEncoder();
const str = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : undefined);

/** AES-256-GCM under `key` with a fresh iv: `iv ‖ ciphertext ‖ tag`, with `aad` bound in. */
export function gcmSeal(key: Uint8Array, aad: string, plain: Uint8Array | string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(text.encode(aad));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

/** Opens what `gcmSeal` made; throws for bytes that do not authenticate under `key` and `aad`. */
export function gcmOpen(key: Uint8Array, aad: string, sealed: Uint8Array): Buffer {
  const data = Buffer.from(sealed);
  if (data.length < IV_BYTES + TAG_BYTES) throw new Error('sealed bytes too short');
  const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
  decipher.setAAD(text.encode(aad));
  decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
  return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
}

/** AES-256-GCM under the ring's current key (see gcmSeal). */
export function seal(keys: KeyRing, aad: string, plain: Uint8Array): { keyId: string; data: Buffer } {
  const { id, key } = keys.current;
  return { keyId: id, data: gcmSeal(key, aad, plain) };
}

/** Opens what `seal` made; throws for an unknown key id or bytes that do not authenticate. */
export function unseal(keys: KeyRing, keyId: string, aad: string, sealed: Uint8Array): Buffer {
  const key = keys.byId.get(keyId);
  if (!key) throw new Error(`no key "${keyId}" in TEMPORAL_PAYLOAD_KEYS`);
  return gcmOpen(key, aad, sealed);
}

export interface CodecOptions {
  /**
   * A worker's codec: a payload no ring key encrypted is not decoded but replaced by the refused
   * value (src/contracts/refused-payload.ts), which the workflows refuse, and `onRefused` is told.
   * The service's own clients and workers encrypt every payload, so such a payload was sent by
   * someone else; decoding it would let a forged input or signal reach a workflow.
   */
  refuseUnencrypted?: boolean;
  onRefused?: () => void;
}

const refusedPayload = (): Payload => ({
  metadata: { encoding: text.encode('json/plain') },
  data: text.encode(JSON.stringify(refusedValue())),
});

/** AES-256-GCM of whole payloads (metadata included), the key id bound in as associated data. */
export class EncryptionCodec implements PayloadCodec {
  constructor(
    private readonly keys: KeyRing,
    private readonly opts: CodecOptions = {},
  ) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const { keyId, data } = seal(
        this.keys,
        this.keys.current.id,
        temporal.api.common.v1.Payload.encode(payload).finish(),
      );
      return { metadata: { encoding: text.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: text.encode(keyId) }, data };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (str(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return this.unencrypted(payload);
      const keyId = str(payload.metadata?.[KEY_ID_METADATA]) ?? '';
      let plain: Buffer;
      try {
        plain = unseal(this.keys, keyId, keyId, payload.data ?? new Uint8Array());
      } catch (err) {
        // A key id the ring lacks is the operator's to mend (a rotated-out key put back): the
        // error stands and the task is retried. Bytes that a key of the ring does not
        // authenticate were never encrypted by the service.
        if (!this.opts.refuseUnencrypted || !this.keys.byId.has(keyId)) throw err;
        return this.unencrypted(payload);
      }
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }

  private unencrypted(payload: Payload): Payload {
    if (!this.opts.refuseUnencrypted) return payload;
    this.opts.onRefused?.();
    return refusedPayload();
  }
}

/** The failure converter that moves messages and stacks into (encrypted) payloads. */
export const failureConverterPath = require.resolve('./failure-converter');

/** The data converter of every Temporal client and worker of the service (a worker's refuses unencrypted payloads). */
export function dataConverter(keys: KeyRing, opts: CodecOptions = {}): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(keys, opts)], failureConverterPath };
}
