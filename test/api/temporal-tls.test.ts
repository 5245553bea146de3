import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Connection, type TLSConfig } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { CODE_RE } from '../../src/codes';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { reconcileScheduleId } from '../../src/contracts/reconcile-contract';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { temporalCli, wholesale } from '../helpers/procurement';
import { startTestTemporalServer, type TestTemporalServer } from '../helpers/temporal-server';
import { makeTestPki, opensslPath, type TestPki } from '../helpers/tls-certs';

// Temporal as a secured dependency (docs/operations.md, *Temporal over TLS*): the production
// Temporal server with mTLS on its frontend, certificates made by the test, and every way the
// service reaches it (the API's client, the worker, the reconciler's schedule, `npx wholesale`)
// configured by TEMPORAL_TLS_* alone. Whoever has no certificate of the CA is not let in.
const root = resolve(__dirname, '..', '..');
const run = promisify(execFile);
let skip: string | undefined;
let pki: TestPki;
let own: TestTemporalServer | undefined;
let h: Harness | undefined;
let address: string;
let tlsEnv: Record<string, string>;

beforeAll(async () => {
  if (!opensslPath()) {
    skip = 'no `openssl` command to make the test certificates (apt-get install openssl)';
    return;
  }
  pki = await makeTestPki();
  const started = await startTestTemporalServer({
    tls: { certFile: pki.server.cert, keyFile: pki.server.key, caFile: pki.ca.cert },
  });
  if ('unavailable' in started) {
    skip = `the production Temporal server is unavailable: ${started.unavailable}`;
    return;
  }
  own = started;
  address = started.server.address;
  tlsEnv = {
    TEMPORAL_TLS_CA: pki.ca.cert,
    TEMPORAL_TLS_CERT: pki.client.cert,
    TEMPORAL_TLS_KEY: pki.client.key,
    // The frontend is dialled at 127.0.0.1 and checked by the other name its certificate carries.
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  };
  h = await startHarness({ TEMPORAL_ADDRESS: address, ...tlsEnv, RECONCILE_SECONDS: '1' });
}, 15 * 60_000);

afterAll(async () => {
  await h?.stop();
  await own?.stop();
}, 60_000);

function skipped(): boolean {
  if (skip) console.warn(`SKIPPED: ${skip}`);
  return !!skip;
}

const pem = (file: string) => readFileSync(file);

test('over mTLS the API and the worker place and deliver a balance order: one debit, balance and ledger agree', async () => {
  if (skipped()) return;
  const { api, accountId } = await reseller(h!, '50.00');
  const placed = await api.post('/orders', { externalOrderId: 'tls-1', productId: 'prod_chatgpt_plus_1m', qty: 1 });
  expect(placed.status).toBe(200);
  expect(placed.body).toMatchObject({ externalOrderId: 'tls-1', amount: '18.00', status: 'delivered', reused: false });
  expect(placed.body.codes).toEqual([expect.stringMatching(CODE_RE)]);
  const ledger = await expectLedgerMatchesBalance(h!, accountId);
  expect(ledger.balance).toBe('32.00');
  expect(ledger.rows.map((r) => [r.type, r.amount])).toEqual([
    ['adjust', '50.00'],
    ['purchase', '-18.00'],
  ]);
  const handle = h!.services.temporal.client.workflow.getHandle(orderWorkflowId(accountId, 'tls-1'));
  await handle.result();
  expect((await handle.describe()).status.name).toBe('COMPLETED');
}, 120_000);

test('the reconciler schedule is created over TLS and the server starts its runs, which the worker completes', async () => {
  if (skipped()) return;
  const schedule = h!.services.temporal.client.schedule.getHandle(reconcileScheduleId(h!.config.TEMPORAL_TASK_QUEUE));
  // The server's own scheduler reaches its frontend over mTLS to start each run.
  const described = await eventually(
    async () => {
      const d = await schedule.describe();
      return d.info.recentActions.length > 0 ? d : undefined;
    },
    60_000,
    250,
    'a scheduled reconciler run',
  );
  expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'reconcileWorkflow' });
  const run = described.info.recentActions[0].action.workflow;
  const handle = h!.services.temporal.client.workflow.getHandle(run.workflowId, run.firstExecutionRunId);
  await handle.result();
  expect((await handle.describe()).status.name).toBe('COMPLETED');
}, 120_000);

test('`npx wholesale reconcile`, a real process with the TLS variables, reconciles through Temporal; an unreadable certificate is a config error naming its variable', async () => {
  if (skipped()) return;
  const done = await wholesale(h!, 'reconcile');
  expect(done.exitCode).toBe(0);
  expect(done.json).toMatchObject({ dryRun: false, findings: expect.any(Array) });

  // The helper passes the harness's settings; a key path that names no file overrides them.
  const missingKey = join(pki.dir, 'no-such.key');
  const refused = await wholesaleWith({ TEMPORAL_TLS_KEY: missingKey }, 'reconcile');
  expect(refused.exitCode).toBe(1);
  expect(refused.json.message).toMatch(/TEMPORAL_TLS_KEY: cannot read the file it names \(ENOENT\)/);
  // A file that is not PEM: named by its variable, its bytes never shown.
  const refusedNotPem = await wholesaleWith({ TEMPORAL_TLS_CA: pki.client.key }, 'reconcile');
  expect(refusedNotPem.json.message).toMatch(/TEMPORAL_TLS_CA: the file it names holds no PEM certificate/);
  expect(refusedNotPem.stderr).not.toContain(pem(pki.client.key).toString().split('\n')[1]);
}, 120_000);

/** `npx wholesale` with some of the harness's settings replaced. */
function wholesaleWith(env: Record<string, string>, ...args: string[]) {
  return wholesale({ ...h!, config: { ...h!.config, ...env } }, ...args);
}

test("the `temporal` CLI with --tls-* flags, or with the service's own variables, lists and describes the order workflow; without them it is refused", async () => {
  if (skipped()) return;
  const { api, accountId } = await reseller(h!, '20.00');
  expect(
    (await api.post('/orders', { externalOrderId: 'tls-cli', productId: 'prod_chatgpt_plus_1m', qty: 1 })).status,
  ).toBe(200);
  const workflowId = orderWorkflowId(accountId, 'tls-cli');
  const described = await temporalCli(h!, 'workflow', 'describe', '--workflow-id', workflowId);
  expect(described.workflowExecutionInfo).toMatchObject({ execution: { workflowId }, type: { name: 'orderWorkflow' } });
  const listed = await eventually(
    async () => {
      const rows = await temporalCli(h!, 'workflow', 'list', '--query', `WorkflowId = '${workflowId}'`);
      return Array.isArray(rows) && rows.length === 1 ? rows : undefined;
    },
    30_000,
    250,
    'the order in the list',
  );
  expect(listed[0]).toMatchObject({ execution: { workflowId }, status: 'WORKFLOW_EXECUTION_STATUS_COMPLETED' });

  // The service's own variables are the CLI's too: an operator's shell with them set needs no flags.
  const temporalBinary = (await run(process.execPath, [join(root, 'scripts', 'ensure-temporal.mjs')])).stdout.trim();
  const { stdout } = await run(temporalBinary, ['workflow', 'describe', '--workflow-id', workflowId, '-o', 'json'], {
    env: { ...process.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: h!.config.TEMPORAL_NAMESPACE, ...tlsEnv },
  });
  expect(JSON.parse(stdout).workflowExecutionInfo).toMatchObject({ execution: { workflowId } });

  const noTls = {
    ...h!,
    config: {
      ...h!.config,
      TEMPORAL_TLS_CA: undefined,
      TEMPORAL_TLS_CERT: undefined,
      TEMPORAL_TLS_KEY: undefined,
      TEMPORAL_TLS_SERVER_NAME: undefined,
    },
  };
  await expect(temporalCli(noTls, 'workflow', 'describe', '--workflow-id', workflowId)).rejects.toThrow();
}, 120_000);

describe('the frontend lets in only clients with a certificate of its CA', () => {
  const trusted = (): TLSConfig => ({ serverRootCACertificate: pem(pki.ca.cert), serverNameOverride: 'localhost' });
  const cases: [string, () => TLSConfig | undefined][] = [
    ['plaintext', () => undefined],
    ['TLS without a client certificate', trusted],
    [
      'a client certificate of another CA',
      () => ({ ...trusted(), clientCertPair: { crt: pem(pki.stranger.cert), key: pem(pki.stranger.key) } }),
    ],
  ];

  test.each(cases)(
    'a client (%s) is refused',
    async (_name, tls) => {
      if (skipped()) return;
      const connecting = Connection.connect({ address, tls: tls(), connectTimeout: '3s' }).then(async (c) => {
        // A handshake the server completes before it checks the certificate fails at the first call.
        try {
          await c.workflowService.getSystemInfo({});
        } finally {
          await c.close();
        }
      });
      // The client keeps trying until its deadline; the server never completes a connection for it.
      await expect(connecting).rejects.toThrow(/Failed to connect before the deadline/);
    },
    30_000,
  );

  test.each(cases)(
    'a worker connection (%s) is refused',
    async (_name, tls) => {
      if (skipped()) return;
      // Refused at the transport (the handshake or the first call's stream), never by a Temporal answer.
      await expect(NativeConnection.connect({ address, tls: tls() ?? null })).rejects.toThrow(
        /tonic::transport::Error\(Transport/,
      );
    },
    30_000,
  );

  test("the service's own certificate is let in, the same way", async () => {
    if (skipped()) return;
    const client = { crt: pem(pki.client.cert), key: pem(pki.client.key) };
    const c = await Connection.connect({
      address,
      tls: { ...trusted(), clientCertPair: client },
      connectTimeout: '3s',
    });
    await expect(c.workflowService.getSystemInfo({})).resolves.toBeDefined();
    await c.close();
    const n = await NativeConnection.connect({ address, tls: { ...trusted(), clientCertPair: client } });
    await n.close();
  }, 30_000);
});
