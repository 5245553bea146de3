// Webhook receivers for the soak: each account's webhook URL names how its receiver answers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { HookMode } from './soak-model';

export interface Received {
  mode: HookMode | 'redirected';
  eventIdHeader?: string;
  deliveryIdHeader?: string;
  bodyEventId?: string;
  status: number | 'hang';
}

/** Webhook receivers that answer 200, 500, hang or redirect, recording every request. */
export class HookReceivers {
  readonly received: Received[] = [];
  private server!: Server;
  private sockets = new Set<Socket>();
  private hanging = new Set<ServerResponse>();
  base = '';

  async start(): Promise<this> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '';
        const mode = (path.startsWith('/redirected') ? 'redirected' : path.split('/')[2]) as Received['mode'];
        let bodyEventId: string | undefined;
        try {
          bodyEventId = JSON.parse(Buffer.concat(chunks).toString('utf8')).eventId;
        } catch {
          bodyEventId = undefined;
        }
        const rec: Received = {
          mode,
          eventIdHeader: req.headers['x-wholesale-event-id'] as string | undefined,
          deliveryIdHeader: req.headers['x-wholesale-delivery-id'] as string | undefined,
          bodyEventId,
          status:
            mode === 'ok' || mode === 'redirected' ? 200 : mode === 'fail' ? 500 : mode === 'redirect' ? 302 : 'hang',
        };
        this.received.push(rec);
        if (rec.status === 'hang') return void this.hanging.add(res);
        if (rec.status === 302) res.setHeader('location', '/redirected');
        res.statusCode = rec.status;
        res.end(rec.status === 200 ? 'ok' : '');
      });
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  url(mode: HookMode, accountId: string): string {
    return `${this.base}/hook/${mode}/${accountId}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
