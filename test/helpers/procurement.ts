import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Config } from '../../src/config';
import { procurementStateQuery, procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { usesTls } from '../../src/temporal/connection';
import { reseller as newReseller, type Harness } from './harness';
import { decodedHistoryText } from './history';
import { call, client, eventually } from './http';

// Helpers of the direct-code procurement and support tests: placing gift-card orders, reading
// what Postgres and Temporal hold, and the operator tools (`npx wholesale`, `temporal`).
const root = resolve(__dirname, '..', '..');
const run = promisify(execFile);

export type Api = ReturnType<typeof client>;

/** A reseller with a client for its key (these tests start from 200.00 USDT). */
export const reseller = (h: Harness, balance = '200.00') => newReseller(h, balance);

/** Polls GET /orders/{id} until `check` accepts it; every answer seen is passed to `seen`. */
export async function orderUntil(
  api: Api,
  orderId: string,
  check: (o: any) => boolean,
  opts: { timeoutMs?: number; seen?: (o: any) => void } = {},
) {
  return eventually(
    async () => {
      const res = await api.get(`/orders/${orderId}`);
      if (res.status !== 200) throw new Error(`GET /orders/${orderId}: ${res.status} ${res.text}`);
      opts.seen?.(res.body);
      return check(res.body) ? res.body : undefined;
    },
    opts.timeoutMs ?? 30_000,
    50,
  );
}

export const fulfillmentIs = (status: string) => (o: any) => o.fulfillmentStatus === status;

export async function eventsOfOrder(h: Harness, orderId: string) {
  return h.services.orm.em
    .fork()
    .execute<{ id: string; type: string; payload: Record<string, any> }[]>(
      `select id, type, payload from events where payload->>'orderId' = ? order by created_at, id`,
      [orderId],
    );
}

/** What the sandbox supplier sold for an order, one row per purchase (idempotency key). */
export async function supplierPurchases(h: Harness, orderId: string) {
  return h.services.orm.em
    .fork()
    .execute<{ idempotency_key: string; requested: number; codes: string[] }[]>(
      `select idempotency_key, requested, codes from sandbox_supplier_orders where idempotency_key like ? order by created_at`,
      [`${orderId}:%`],
    );
}

export async function storedCodes(h: Harness, orderId: string) {
  return h.services.orm.em
    .fork()
    .execute<{ code: string; kind: string; is_test: boolean }[]>(
      'select code, kind, is_test from issued_codes where order_id = ? order by id',
      [orderId],
    );
}

export async function supportActionsOf(h: Harness, orderId: string) {
  return h.services.orm.em
    .fork()
    .execute<{ action: string; actor: string; reason: string; payload: Record<string, unknown> }[]>(
      'select action, actor, reason, payload from support_actions where subject_id = ? order by id',
      [orderId],
    );
}

export function procurementState(h: Harness, orderId: string) {
  return h.services.temporal.client.workflow.getHandle(procurementWorkflowId(orderId)).query(procurementStateQuery);
}

/** A workflow's whole history as text, payloads decoded: to check what never enters it. */
export async function historyText(h: Harness, workflowId: string): Promise<string> {
  // Decoded as an operator reads it through the codec server; the server itself holds ciphertext.
  return decodedHistoryText(h.services.temporal.client, h.config.TEMPORAL_PAYLOAD_KEYS, workflowId);
}

/** Workflow ids matching a visibility query (eventually consistent: poll with `eventually`). */
export async function workflowIds(h: Harness, query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of h.services.temporal.client.workflow.list({ query })) ids.push(wf.workflowId);
  return ids.sort();
}

/** How the harness reaches Temporal over TLS: the service's variables, and the `temporal` CLI's flags for the same. */
const TLS_SETTINGS = [
  ['TEMPORAL_TLS_CA', '--tls-ca-path'],
  ['TEMPORAL_TLS_CERT', '--tls-cert-path'],
  ['TEMPORAL_TLS_KEY', '--tls-key-path'],
  ['TEMPORAL_TLS_SERVER_NAME', '--tls-server-name'],
  ['TEMPORAL_API_KEY', '--api-key'],
] as const;

function temporalTlsEnv(c: Config): Record<string, string> {
  const given = TLS_SETTINGS.flatMap(([name]) => (c[name] ? [[name, c[name]]] : []));
  return Object.fromEntries(c.TEMPORAL_TLS ? [...given, ['TEMPORAL_TLS', 'true']] : given);
}

function temporalTlsFlags(c: Config): string[] {
  const given = TLS_SETTINGS.flatMap(([name, flag]) => (c[name] ? [flag, c[name]] : []));
  return usesTls(c) ? ['--tls', ...given] : given;
}

/** `npx wholesale ...` as a real process against the harness's database and Temporal (over TLS when the harness is). */
export async function wholesale(
  h: Harness,
  ...args: string[]
): Promise<{ exitCode: number; json: any; stderr: string }> {
  const env = {
    ...process.env,
    DATABASE_URL: h.databaseUrl,
    TEMPORAL_ADDRESS: h.config.TEMPORAL_ADDRESS,
    TEMPORAL_TASK_QUEUE: h.config.TEMPORAL_TASK_QUEUE,
    ...temporalTlsEnv(h.config),
    LOG_LEVEL: 'silent',
  };
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'bin', 'wholesale.js'), ...args], {
      cwd: root,
      env,
    });
    return { exitCode: 0, json: JSON.parse(stdout), stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    let json: any;
    try {
      json = JSON.parse(e.stderr ?? '');
    } catch {
      json = undefined;
    }
    return { exitCode: typeof e.code === 'number' ? e.code : 1, json, stderr: e.stderr ?? '' };
  }
}

let temporalBinary: string | undefined;

/** The `temporal` CLI that ops use, against the test's Temporal server (JSON output; over TLS when the harness is). */
export async function temporalCli(h: Harness, ...args: string[]): Promise<any> {
  temporalBinary ??= (await run(process.execPath, [join(root, 'scripts', 'ensure-temporal.mjs')])).stdout.trim();
  // Payloads are encrypted: the CLI reads them through the service's codec server, as the runbook says.
  const token = h.config.CODEC_TOKEN ?? h.config.ADMIN_TOKEN;
  const codec = token ? ['--codec-endpoint', `${h.baseUrl}/codec`, '--codec-auth', `Bearer ${token}`] : [];
  const { stdout } = await run(temporalBinary, [
    ...args,
    ...codec,
    '--address',
    h.config.TEMPORAL_ADDRESS!,
    ...temporalTlsFlags(h.config),
    '--namespace',
    h.config.TEMPORAL_NAMESPACE,
    '-o',
    'json',
  ]);
  return stdout.trim() ? JSON.parse(stdout) : undefined;
}

/** The admin API under /admin/v1 with a token. */
export function adminApi(h: Harness, token: string | undefined) {
  const headers = token ? { authorization: `Bearer ${token}` } : undefined;
  const base = `${h.baseUrl}/admin/v1`;
  return {
    get: (path: string) => call(`${base}${path}`, { headers }),
    post: (path: string, body: unknown) => call(`${base}${path}`, { body, headers }),
  };
}
