import type { Socket } from 'node:net';

/** The head of each HTTP answer read from a raw socket, in order; a close rejects the wait. */
export function answersOn(socket: Socket): { next(): Promise<string> } {
  let buffered = '';
  const waiting: { ok: (head: string) => void; fail: (e: Error) => void }[] = [];
  const heads: string[] = [];
  let closed = false;
  const settle = () => {
    while (heads.length && waiting.length) waiting.shift()!.ok(heads.shift()!);
    if (closed) for (const w of waiting.splice(0)) w.fail(new Error('the server closed the connection'));
  };
  socket.on('data', (d) => {
    buffered += d.toString('latin1');
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) break;
      const head = buffered.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (buffered.length < end + 4 + length) break;
      heads.push(head);
      buffered = buffered.slice(end + 4 + length);
    }
    settle();
  });
  socket.on('close', () => {
    closed = true;
    settle();
  });
  return {
    next: () =>
      new Promise<string>((ok, fail) => {
        waiting.push({ ok, fail });
        settle();
      }),
  };
}
