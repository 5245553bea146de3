import type { ChildProcess } from 'node:child_process';
import { startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { client, eventually, postRetrying } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// Issue 16 item 3: one structured log stream. The worker process (`npm run worker`), through a
// business rejection and a restart, writes only JSON objects, one per line, on stdout and stderr:
// its own lines, the Temporal SDK's and the core's (forwarded into pino), with the workflow id
// as a field where there is one, and no secret.
let h: Harness;

beforeAll(async () => {
  h = await startHarness({}, { worker: false });
});
afterAll(() => h?.stop());

function capture(child: ChildProcess, lines: string[]): void {
  for (const stream of [child.stdout!, child.stderr!]) {
    let buffer = '';
    stream.on('data', (d) => {
      buffer += String(d);
      const parts = buffer.split('\n');
      buffer = parts.pop()!;
      lines.push(...parts);
    });
  }
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('close', r));
  child.kill('SIGTERM');
  return exited;
}

test('a business rejection and a worker restart: every line the worker wrote parses as JSON', async () => {
  const { accountId, apiKey } = await h.account('0.50');
  const api = client(h.apiUrl, apiKey);
  const lines: string[] = [];
  const env = { LOG_LEVEL: 'info' };

  let placed: any;
  let again: any;
  let worker = startWorkerProcess(h, env);
  capture(worker, lines);
  try {
    const rejected = await postRetrying(api, '/orders', {
      externalOrderId: 'logs-poor',
      productId: 'prod_chatgpt_plus_1m',
      qty: 1,
    });
    expect(rejected.body.error).toBe('insufficient_balance');
    placed = await api.post('/orders', { externalOrderId: 'logs-ok', productId: 'prod_api_order_test', qty: 1 });
    expect(placed.body.status).toBe('delivered');

    expect(await stop(worker)).toBe(0);
    worker = startWorkerProcess(h, env);
    capture(worker, lines);
    again = await postRetrying(api, '/orders', {
      externalOrderId: 'logs-ok-2',
      productId: 'prod_api_order_test',
      qty: 1,
    });
    expect(again.body.status).toBe('delivered');
    await eventually(async () => lines.some((l) => l.includes('"started"')), 10_000);
  } finally {
    await stop(worker);
  }

  expect(lines.length).toBeGreaterThan(4);
  const parsed = lines.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(`not a JSON line: ${line}`);
    }
  });
  expect(parsed.every((l) => typeof l.level === 'number' && typeof l.msg === 'string')).toBe(true);
  // The Temporal runtime's lines come through the same logger, with their fields.
  expect(parsed.some((l) => l.temporal === true && l.taskQueue === h.config.TEMPORAL_TASK_QUEUE)).toBe(true);
  // Two clean starts and two clean stops, no failure of the worker itself.
  expect(parsed.filter((l) => l.msg === 'started')).toHaveLength(2);
  expect(parsed.some((l) => /temporal worker failed|cannot start/.test(String(l.msg)))).toBe(false);
  // Issue 14: a business rejection is an answer, so the worker logs nothing above info for it
  // (the one warning is the development-secrets notice of issue 11, once per start).
  expect(parsed.filter((l) => (l.level as number) > 30).map((l) => l.msg)).toEqual([
    expect.stringMatching(/^built-in development secrets in use/),
    expect.stringMatching(/^built-in development secrets in use/),
  ]);
  // Nothing secret: no API key and no code in any line.
  const all = lines.join('\n');
  expect(all).not.toContain(apiKey);
  for (const code of [...placed.body.codes, ...again.body.codes]) expect(all).not.toContain(code);
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.48');
}, 120_000);
