import { createHash, timingSafeEqual } from 'node:crypto';
import express, { Router, type RequestHandler } from 'express';
import type { Payload } from '@temporalio/common';
import { z } from 'zod';
import { ApiError } from '../../domain/errors';
import { safeText } from '../../domain/text';
import { codecUnopenedPayloads } from '../../metrics/registry';
import { EncryptionCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA, parseKeyRing } from '../../temporal/codec';
import type { AppContext } from '../context';

// The codec server of Temporal's remote codec protocol, so that operators read decoded payloads
// in the Web UI and the CLI: POST <endpoint>/decode and <endpoint>/encode with
// `{"payloads": [{"metadata": {k: base64}, "data": base64}]}`, answered in the same shape.
//
// Who may ask: the token travels only in `Authorization: Bearer <token>` (the CLI's `--codec-auth`,
// the Temporal UI's "pass the user access token"), never in the URL, which the UI's settings hand
// to every browser that opens it and proxies log. CODEC_TOKEN decodes; encoding takes ADMIN_TOKEN,
// because a payload sealed with the ring's key reads to the worker as the service's own. The token
// is checked before the body is read, so an unauthenticated body is never buffered or parsed. Only
// the configured UI origin may call across origins (its preflight carries no token). With neither
// token set the codec server is off (404).

export const CODEC_PREFIX = '/codec';

/** How many payloads of a decode answer no key opened, and the key ids they named. */
export const UNOPENED_HEADER = 'X-Codec-Unopened';
export const UNOPENED_KEYS_HEADER = 'X-Codec-Unopened-Key-Ids';

/** The endpoint the CLI and the Temporal UI are given: no token in it (that goes in the Authorization header). */
export const codecEndpoint = (config: Pick<AppContext['config'], 'publicBaseUrl' | 'CODEC_TOKEN'>) =>
  config.CODEC_TOKEN ? `${config.publicBaseUrl}${CODEC_PREFIX}` : undefined;

const digest = (s: string) => createHash('sha256').update(s).digest();
const sameSecret = (given: string | undefined, expected: Buffer | undefined) =>
  !!given && !!expected && timingSafeEqual(digest(given), expected);

const PayloadJson = z.object({
  metadata: z.record(z.string().max(256), z.string().max(4096)).optional(),
  data: z.string().optional(),
});
// The CLI sends `{}` for an empty list (protobuf JSON leaves empty repeated fields out).
const Body = z.object({ payloads: z.array(PayloadJson).max(10_000).default([]) });

const fromJson = (p: z.infer<typeof PayloadJson>): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** The UI origin may call across origins (it sends X-Namespace and a JSON body, so it pre-flights). */
function cors(origin: string | undefined): RequestHandler {
  return (req, res, next) => {
    if (origin && req.header('origin') === origin) {
      res.set({
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': 'content-type, x-namespace, authorization',
        'Access-Control-Max-Age': '600',
        'Access-Control-Expose-Headers': `${UNOPENED_HEADER}, ${UNOPENED_KEYS_HEADER}`,
        Vary: 'Origin',
      });
      if (req.method === 'OPTIONS') return void res.status(204).end();
    }
    next();
  };
}

export function codecRoutes(ctx: AppContext): Router {
  const router = Router({ strict: true });
  const admin = ctx.config.ADMIN_TOKEN ? digest(ctx.config.ADMIN_TOKEN) : undefined;
  const operator = ctx.config.CODEC_TOKEN ? digest(ctx.config.CODEC_TOKEN) : undefined;
  const codec = new EncryptionCodec(parseKeyRing(ctx.config.TEMPORAL_PAYLOAD_KEYS));
  const warnings = new KeyWarnings();

  router.use((req, _res, next) => {
    // Neither refusal echoes the path: a client still configured with a token in it would see it repeated.
    if (!admin && !operator) throw new ApiError('not_found', `No route for ${req.method} ${req.baseUrl}`);
    next();
  });
  router.use(cors(ctx.config.TEMPORAL_UI_ORIGIN));

  // Before any byte of the body is read: which token the request bears, if any.
  const bearer: RequestHandler = (req, res, next) => {
    const given = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '')?.[1];
    const role = sameSecret(given, admin) ? 'admin' : sameSecret(given, operator) ? 'operator' : undefined;
    if (!role) throw new ApiError('unauthorized', 'Missing or invalid codec token');
    res.locals.codecRole = role;
    next();
  };
  const parseJson = express.json({ limit: '8mb' });

  for (const action of ['decode', 'encode'] as const) {
    const handle: RequestHandler = async (req, res) => {
      const body = Body.parse(req.body);
      const payloads = body.payloads.map(fromJson);
      // Sealing takes ADMIN_TOKEN. An empty list seals nothing, and the CLI's `workflow query` asks
      // for it (its absent query arguments), so CODEC_TOKEN gets that answer.
      if (action === 'encode' && payloads.length > 0 && res.locals.codecRole !== 'admin') {
        throw new ApiError('unauthorized', 'Encoding takes ADMIN_TOKEN (CODEC_TOKEN only decodes)');
      }
      // A payload that is not encrypted is shown as it is, whatever the worker makes of it: the
      // operator sees what a plain (maybe forged) message said. A payload no configured key opens
      // (its key was dropped from the ring) is shown as it is too, and the operator is told which
      // key ids are missing.
      const unopened: string[] = [];
      const out =
        action === 'decode'
          ? await Promise.all(
              payloads.map(async (p) =>
                !isSealed(p)
                  ? p
                  : codec.decode([p]).then(
                      ([d]) => d,
                      () => (unopened.push(keyIdOf(p)), p),
                    ),
              ),
            )
          : await codec.encode(payloads);
      ctx.logger.info({ requestId: res.locals.requestId, action, count: payloads.length }, 'codec');
      if (unopened.length > 0) {
        // The UI still renders them; the answer says so, and the operator's log once a minute per key.
        const keyIds = [...new Set(unopened)];
        res.set({ [UNOPENED_HEADER]: String(unopened.length), [UNOPENED_KEYS_HEADER]: keyIds.join(',') });
        codecUnopenedPayloads.inc(unopened.length);
        const fresh = warnings.due(keyIds);
        if (fresh.length > 0) {
          ctx.logger.warn(
            { requestId: res.locals.requestId, keyIds: fresh },
            'codec: no configured key opens these payloads; they are shown encrypted (is a rotated-out key missing from TEMPORAL_PAYLOAD_KEYS?)',
          );
        }
      }
      res.set('Cache-Control', 'no-store').json({ payloads: out.map(toJson) });
    };
    router.post(`/${action}`, bearer, parseJson, handle);
  }
  router.use(() => {
    throw new ApiError(
      'not_found',
      `The codec server answers POST ${CODEC_PREFIX}/decode and ${CODEC_PREFIX}/encode; the token goes in the Authorization header, never in the path`,
    );
  });
  return router;
}

const isSealed = (p: Payload) =>
  Buffer.from(p.metadata?.encoding ?? new Uint8Array()).toString('utf8') === ENCRYPTED_ENCODING;

/**
 * The key id an encrypted payload names (ids are not secret), as the ring spells them (letters,
 * digits, '.', '_', '-'), so it fits a log field and a response header; anything else is `(invalid)`.
 */
function keyIdOf(p: Payload): string {
  const raw = p.metadata?.[KEY_ID_METADATA];
  if (!raw) return '(none)';
  const id = safeText(Buffer.from(raw).toString('utf8'), 64);
  return /^[A-Za-z0-9._-]{1,64}$/.test(id) ? id : '(invalid)';
}

const WARN_EVERY_MS = 60_000;

/** One warning per key id per minute: an operator paging through a history is told once, not per page. */
class KeyWarnings {
  private readonly last = new Map<string, number>();

  /** The ids not warned about in the last minute (now marked as warned). */
  due(keyIds: string[]): string[] {
    const now = Date.now();
    if (this.last.size > 1000) for (const [id, at] of this.last) if (now - at >= WARN_EVERY_MS) this.last.delete(id);
    const fresh = keyIds.filter((id) => now - (this.last.get(id) ?? -Infinity) >= WARN_EVERY_MS);
    for (const id of fresh) this.last.set(id, now);
    return fresh;
  }
}
