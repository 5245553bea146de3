import { connect, type Socket } from 'node:net';
import { startHarness, type Harness } from '../helpers/harness';
import { answersOn } from '../helpers/raw-http';

// A stopping API lets the requests in flight finish and closes every connection as soon as it is
// idle: neither the keep-alive timeout (HTTP_KEEP_ALIVE_SECONDS, 65 s) nor the 10 s grace for
// hung requests holds the shutdown up.
let h: Harness;
let stopping: Promise<void> | undefined;

beforeAll(async () => {
  h = await startHarness({}, { worker: false });
});
// Stopped by the test; stopped here only if it failed before that.
afterAll(() => stopping ?? h?.stop());

const open = (): Socket => connect(Number(new URL(h.baseUrl).port), '127.0.0.1');
const closed = (socket: Socket) => new Promise<number>((ok) => socket.once('close', () => ok(Date.now())));

test('a request in flight at shutdown is answered, then its connection closes at once, like an idle one', async () => {
  const idle = open();
  const idleAnswers = answersOn(idle);
  idle.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  expect(await idleAnswers.next()).toMatch(/^HTTP\/1\.1 200 /);
  const idleClosed = closed(idle);

  // A request the server is still reading when the shutdown begins: half its body is sent.
  const busy = open();
  const busyAnswers = answersOn(busy);
  const busyClosed = closed(busy);
  const body = '{"externalOrderId":"shutdown-1","productId":"prod_chatgpt_plus_1m","qty":1}';
  busy.write(
    `POST /wholesale/v1/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  );
  await new Promise((r) => setTimeout(r, 200));

  stopping = h.stop();
  await idleClosed;
  await new Promise((r) => setTimeout(r, 300));
  expect(busy.destroyed).toBe(false);
  busy.write(body.slice(10));
  // Answered (no key: 401), and the connection is closed once that answer is out.
  const answer = await busyAnswers.next();
  const answeredAt = Date.now();
  expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  expect((await busyClosed) - answeredAt).toBeLessThan(2000);
  await stopping;
}, 30_000);
