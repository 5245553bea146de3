// Loopback ports for servers that a child process binds after we chose them (the production
// Temporal server here, Postgres and the API/worker processes in the tests). They come from below
// the kernel's ephemeral range (32768 and up), where `listen(0)` and the outgoing connections of
// every other process on the machine take theirs, so a port that was free when chosen cannot be
// taken by a neighbour before the child binds it. Random within the range, checked free, and never
// handed out twice by one process.
import { createServer } from 'node:net';

const LOW = 20_000;
const HIGH = 32_767;
const handedOut = new Set<number>();

/** Whether 127.0.0.1:port can be bound right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const srv = createServer();
    srv.once('error', () => resolveFree(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolveFree(true)));
  });
}

/** A loopback port below 32768 that is free now and that this process has not handed out before. */
export async function freeLowPort(): Promise<number> {
  for (let tries = 0; tries < 500; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await portFree(port)) return port;
  }
  throw new Error(`no free loopback port in ${LOW}-${HIGH}`);
}
