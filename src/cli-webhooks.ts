import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { resolve } from 'node:path';
import type { Config } from './config';
import { ApiError } from './domain/errors';
import { SIGNATURE_HEADERS, WebhookEvent } from './http/webhook-events';

// `npx wholesale webhooks listen`: a local receiver for a developer's own account, like a payment
// provider's CLI `listen`. It registers itself with PUT /webhook through the API (so the same URL
// rules apply: `npm start` admits loopback http:// receivers), verifies every delivery's signature
// against the raw body and its schema against the published one, answers 200, and prints each
// event as one JSON line. Codes in events are masked in what it prints.

export const WEBHOOKS_USAGE = `  webhooks listen [--port N] [--key KEY] [--api URL] [--keep]
                                                      receive this account's webhooks on 127.0.0.1 and print each event, its
                                                      signature checked (KEY defaults to the demo key of npm start; --keep leaves
                                                      the webhook registered on exit)`;

const maskCode = (code: string) =>
  code.length > 8 ? `${code.slice(0, 4)}${'*'.repeat(code.length - 8)}${code.slice(-4)}` : '****';

function verified(secret: string, raw: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', secret).update(raw).digest();
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function readBody(req: IncomingMessage, limit = 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** What is printed for one delivery: the event with its codes masked, and what was checked. */
function describe(raw: Buffer, headers: IncomingMessage['headers'], signature: boolean) {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return { signature: signature ? 'verified' : 'INVALID', schema: 'not JSON' };
  }
  const parsed = WebhookEvent.safeParse(json);
  // Any JSON may arrive (`null`, a number): only an object has fields to mask.
  const isObject = typeof json === 'object' && json !== null;
  const body = (isObject ? json : {}) as Record<string, unknown>;
  const shown = isObject
    ? {
        ...body,
        ...(Array.isArray(body.codes) ? { codes: body.codes.map((c: unknown) => maskCode(String(c))) } : {}),
        ...(typeof body.code === 'string' ? { code: maskCode(body.code) } : {}),
      }
    : json;
  return {
    event: body.event,
    eventId: body.eventId,
    deliveryId: headers[SIGNATURE_HEADERS.deliveryId.toLowerCase()],
    signature: signature ? 'verified' : 'INVALID',
    schema: parsed.success ? 'valid' : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`),
    body: shown,
  };
}

function demoKey(config: Config): string | undefined {
  const file = resolve(config.STATE_DIR, 'demo-account.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { apiKey?: string }).apiKey : undefined;
}

async function putWebhook(api: string, key: string, url: string): Promise<{ url: string; secret?: string }> {
  const res = await fetch(`${api}/webhook`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });
  const body = (await res.json()) as { url: string; secret?: string; error?: string; message?: string };
  if (!res.ok)
    throw new ApiError('invalid_input', `PUT /webhook answered ${res.status} ${body.error}: ${body.message}`);
  return body;
}

export async function listenForWebhooks(
  config: Config,
  values: Record<string, string | boolean | undefined>,
): Promise<number> {
  const key = (values.key as string | undefined) ?? process.env.WHOLESALE_API_KEY ?? demoKey(config);
  if (!key)
    throw new ApiError('invalid_input', '--key is required (or WHOLESALE_API_KEY, or the demo key of npm start)');
  const api = ((values.api as string | undefined) ?? `${config.publicBaseUrl}/wholesale/v1`).replace(/\/$/, '');
  const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

  let secret = '';
  const server: Server = createServer((req, res) => {
    void (async () => {
      try {
        const raw = await readBody(req);
        const signature = verified(
          secret,
          raw,
          req.headers[SIGNATURE_HEADERS.signature.toLowerCase()] as string | undefined,
        );
        say({ received: new Date().toISOString(), ...describe(raw, req.headers, signature) });
        // A delivery that is not signed with this account's secret is not ours: refused, so the
        // service would retry it, and visible here.
        res
          .writeHead(signature ? 200 : 401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ok: signature }));
      } catch {
        res.writeHead(400).end();
      }
    })();
  });
  const port = Number(values.port ?? 0);
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/webhook`;
  try {
    const configured = await putWebhook(api, key, url);
    secret = configured.secret ?? '';
  } catch (err) {
    server.close();
    throw err;
  }
  say({
    listening: url,
    api,
    note: 'every delivery is verified with the signing secret PUT /webhook returned (kept in memory only); Ctrl-C to stop',
  });

  await new Promise<void>((done) => {
    const stop = () => done();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  server.close();
  if (!values.keep) {
    // Unregister only if the webhook is still ours (someone may have set another meanwhile).
    const current = await fetch(`${api}/webhook`, { headers: { authorization: `Bearer ${key}` } })
      .then((r) => r.json() as Promise<{ url?: string }>)
      .catch(() => ({}) as { url?: string });
    if (current.url === url) await putWebhook(api, key, '').catch(() => undefined);
  }
  say({ stopped: url, unregistered: !values.keep });
  return 0;
}
