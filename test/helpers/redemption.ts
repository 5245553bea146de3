import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { reseller as newReseller, type Harness } from './harness';
import { client, eventually } from './http';

// Helpers of the redemption tests: buying codes, reading what Postgres holds, the operator CLI.
const root = resolve(__dirname, '..', '..');
const run = promisify(execFile);

export type Api = ReturnType<typeof client>;

/** A reseller with a client for its key (these tests start from 200.00 USDT). */
export const reseller = (h: Harness, balance = '200.00') => newReseller(h, balance);

/** Buys one code of a redemption product through POST /orders. */
export async function buyCode(
  api: Api,
  productId: string,
): Promise<{ code: string; orderId: string; externalOrderId: string }> {
  const externalOrderId = `rdm-test-${randomBytes(4).toString('hex')}`;
  const res = await api.post('/orders', { externalOrderId, productId, qty: 1 });
  if (res.status !== 200 || res.body.status !== 'delivered')
    throw new Error(`order failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { code: res.body.codes[0], orderId: res.body.orderId, externalOrderId };
}

/** Polls GET /redemptions/{id} until it reaches `status`. */
export async function redemptionReaches(api: Api, redemptionId: string, status: string, timeoutMs = 30_000) {
  return eventually(async () => {
    const res = await api.get(`/redemptions/${redemptionId}`);
    return res.body?.status === status ? res.body : undefined;
  }, timeoutMs);
}

export async function eventsOf(h: Harness, accountId: string) {
  return h.services.orm.em
    .fork()
    .execute<{ id: string; type: string; payload: Record<string, unknown> }[]>(
      `select id, type, payload from events where account_id = ? and type like 'redemption.%' order by created_at, id`,
      [accountId],
    );
}

export async function attemptsOf(h: Harness, redemptionId: string) {
  return h.services.orm.em.fork().execute<
    {
      attempt: number;
      status: string;
      redeem_info: Record<string, string>;
      holds_resources: boolean;
      failure_code: string | null;
      upstream_ref: string | null;
    }[]
  >('select attempt, status, redeem_info, holds_resources, failure_code, upstream_ref from redemption_attempts where redemption_id = ? order by attempt', [redemptionId]);
}

/** Every redemption row of a code, however it was submitted. */
export async function redemptionRowsOfCode(h: Harness, code: string) {
  return h.services.orm.em
    .fork()
    .execute<{ id: string; status: string; attempt: number }[]>(
      'select r.id, r.status, r.attempt from redemptions r join issued_codes ic on ic.id = r.code_id where ic.code = ?',
      [code],
    );
}

/** `npx wholesale ...` as a real process against the harness's database and Temporal. */
export async function wholesale(
  h: Harness,
  ...args: string[]
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'bin', 'wholesale.js'), ...args], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: h.databaseUrl,
        TEMPORAL_ADDRESS: h.config.TEMPORAL_ADDRESS,
        TEMPORAL_NAMESPACE: h.config.TEMPORAL_NAMESPACE,
        TEMPORAL_TASK_QUEUE: h.config.TEMPORAL_TASK_QUEUE,
        LOG_LEVEL: 'silent',
      },
    });
    return { exitCode: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { exitCode: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Waits until the current fixed rate-limit window has at least `seconds` left, so a burst stays in one window. */
export async function freshRateWindow(windowSeconds = 60, seconds = 15): Promise<void> {
  await eventually(
    async () => windowSeconds - ((Date.now() / 1000) % windowSeconds) >= seconds,
    windowSeconds * 1000,
    250,
  );
}
