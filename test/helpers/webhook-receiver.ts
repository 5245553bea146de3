import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { eventually } from './http';

/** How the receiver answers one request: a status code, or `hang` (never answer). */
export type Reply = number | 'hang';

export interface Received {
  /** Arrival time (ms since epoch) once the whole body is in. */
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
  reply: Reply;
}

export interface Receiver {
  /** Where webhooks are configured to go. */
  url: string;
  /** Where the 302 points; the service must never follow it. */
  redirectTarget: string;
  received: Received[];
  /** Replies to use for the next requests, in order; afterwards `otherwise` applies. */
  script(replies: Reply[]): void;
  /** The reply once the script is used up, or a function of the request (e.g. by event id). */
  otherwise: Reply | ((r: Omit<Received, 'reply'>) => Reply);
  /** Requests to the webhook path whose reply was a 2xx. */
  accepted(): Received[];
  waitFor(count: number, pick?: (all: Received[]) => Received[], timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/**
 * A scriptable local HTTP receiver for webhook tests: answers 500, 302, hangs or 200 as told,
 * and records the raw body, headers and arrival time of every request.
 */
export async function startReceiver(): Promise<Receiver> {
  const queue: Reply[] = [];
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const received: Received[] = [];

  const receiver = {} as Receiver;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const base = { at: Date.now(), path: req.url ?? '', headers: req.headers, raw, body };
      const next = queue.shift();
      const reply: Reply =
        req.url === '/redirected'
          ? 200
          : (next ?? (typeof receiver.otherwise === 'function' ? receiver.otherwise(base) : receiver.otherwise));
      received.push({ ...base, reply });
      if (reply === 'hang') {
        hanging.add(res);
        return;
      }
      if (reply >= 300 && reply < 400) res.setHeader('Location', receiver.redirectTarget);
      res.statusCode = reply;
      res.end('{}');
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };

  Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/hook`,
    redirectTarget: `http://127.0.0.1:${port}/redirected`,
    received,
    otherwise: 200 as Reply,
    script(replies: Reply[]) {
      queue.push(...replies);
    },
    accepted: () =>
      received.filter((r) => r.path === '/hook' && typeof r.reply === 'number' && r.reply >= 200 && r.reply < 300),
    waitFor(
      count: number,
      pick: (all: Received[]) => Received[] = (all) => all.filter((r) => r.path === '/hook'),
      timeoutMs = 30_000,
    ) {
      return eventually(async () => {
        const got = pick(received);
        return got.length >= count ? got : undefined;
      }, timeoutMs);
    },
    async close() {
      for (const res of hanging) res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  });
  return receiver;
}

/** A receiver's standard check: HMAC-SHA256 of the raw body with the secret, compared in constant time. */
export function verifySignature(secret: string, raw: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', secret).update(raw, 'utf8').digest();
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
