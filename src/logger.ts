import pino, { type Logger } from 'pino';
import { CODE_ALPHABET } from './codes';

// Secrets never reach logs: keys, webhook secrets, checkout URLs and codes are redacted wherever
// they appear in a logged object.
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'apiKey',
  '*.apiKey',
  'secret',
  '*.secret',
  'checkoutUrl',
  '*.checkoutUrl',
  'paymentUrl',
  '*.paymentUrl',
  'codes',
  '*.codes',
  'code',
  '*.code',
  'redeemInfo',
  '*.redeemInfo',
];

// Paths only catch a secret under its own name. A failure's text can carry one anywhere: MikroORM
// inlines a statement's parameters into the SQL a Postgres error quotes, and the SDK logs a failed
// activity's message, and any field can hold such text. So every string of a line (its message,
// its fields at any depth, an error's message and stack) loses every value shaped like one of
// ours: a checkout id (the secret part of its link), an API key, a webhook secret, a platform code.
const SECRET_IDS = /\b(chk|wsk|whsec)_[A-Za-z0-9_-]{16,}/g;
const PLATFORM_CODE = new RegExp(`\\b[${CODE_ALPHABET}]{4}(?:-[${CODE_ALPHABET}]{4}){3}\\b`, 'g');

export function scrubSecrets(text: string): string {
  return text.replace(SECRET_IDS, '$1_[redacted]').replace(PLATFORM_CODE, '[redacted]');
}

/** pino's error serializer, with the secrets scrubbed from every string it keeps (causes too). */
function scrubbedError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown;
  return scrubStrings(out, 0);
}

/** Below this depth a field is scrubbed as its JSON text, in one pass, instead of key by key. */
const WALK_DEPTH = 4;

function scrubStrings(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (!value || typeof value !== 'object') return value;
  if (depth > WALK_DEPTH) return scrubbedJson(value);
  if (Array.isArray(value)) return value.map((v) => scrubStrings(v, depth + 1));
  // An Error is the `err` serializer's (it keeps the message and stack, which are not enumerable);
  // a value with its own JSON form (a Date, a Buffer) keeps it.
  if (value instanceof Error || typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubStrings(v, depth + 1)]));
}

/** A deep value as the line would show it, scrubbed (the secrets' shapes hold no JSON escapes). */
function scrubbedJson(value: object): unknown {
  try {
    return JSON.parse(scrubSecrets(JSON.stringify(value))) as unknown;
  } catch {
    return '[unserializable]';
  }
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { service: 'wholesale' },
      serializers: { err: scrubbedError },
      formatters: { log: (fields) => scrubStrings(fields, 0) as Record<string, unknown> },
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((a) => (typeof a === 'string' ? scrubSecrets(a) : a)) as Parameters<typeof method>,
          );
        },
      },
    },
    destination,
  );
}
