// A JSON-RPC proxy on loopback in front of a real node, scripted by method: what a node that is
// down answers, or one behind a load balancer whose backends lag (the head of one backend, the
// blocks and logs of another).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RpcProxy {
  url: string;
  /** Every call answers HTTP 503. */
  down: boolean;
  /** `method` answered with `result` instead of the node's answer. */
  answer(method: string, result: unknown): void;
  /** `method` answered with a JSON-RPC error. */
  fail(method: string): void;
  /** `method` forwarded to the node again. */
  pass(method: string): void;
  /** Calls of `method` received so far (forwarded or not). */
  count(method: string): number;
  /**
   * The call of `method` after the next `skip` ones, and every later one, are held unanswered
   * (a node that stops answering mid-read) until `release`; `arrived` resolves when the first is.
   */
  hold(method: string, skip: number): { arrived: Promise<void>; release(): void };
  stop(): Promise<void>;
}

export async function startRpcProxy(target: string): Promise<RpcProxy> {
  const scripted = new Map<string, { result: unknown } | 'error'>();
  const counts = new Map<string, number>();
  const holds = new Map<string, { from: number; arrived: () => void; released: Promise<void> }>();
  const proxy = { down: false } as RpcProxy;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      void (async () => {
        const call = JSON.parse(body) as { id: number; method: string };
        counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
        const held = holds.get(call.method);
        if (held && counts.get(call.method)! >= held.from) {
          held.arrived();
          await held.released;
        }
        if (proxy.down) return void res.writeHead(503).end();
        const script = scripted.get(call.method);
        res.setHeader('content-type', 'application/json');
        if (script === 'error')
          return void res.end(
            JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32603, message: 'scripted failure' } }),
          );
        if (script) return void res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: script.result }));
        const forwarded = await fetch(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        }).then(
          (r) => r.text(),
          () => undefined,
        );
        if (forwarded === undefined) return void res.writeHead(502).end();
        res.end(forwarded);
      })();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answer: (method: string, result: unknown) => void scripted.set(method, { result }),
    fail: (method: string) => void scripted.set(method, 'error'),
    pass: (method: string) => void scripted.delete(method),
    count: (method: string) => counts.get(method) ?? 0,
    hold: (method: string, skip: number) => {
      let arrived!: () => void;
      let release!: () => void;
      const arrival = new Promise<void>((ok) => (arrived = ok));
      const released = new Promise<void>((ok) => (release = ok));
      holds.set(method, { from: (counts.get(method) ?? 0) + skip + 1, arrived, released });
      return {
        arrived: arrival,
        release: () => {
          holds.delete(method);
          release();
        },
      };
    },
    stop: () => {
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      server.closeAllConnections();
      return closed;
    },
  });
}
