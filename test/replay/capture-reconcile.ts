// Regenerates the replay fixtures of reconcileWorkflow (test/fixtures/histories): a run that
// repairs an orphan (a webhook delivery whose start was lost), and a run bounded to one step that
// continues as new, its first run and its last. The soak capture (./capture.ts) leaves these alone.
//
//   node --import tsx test/replay/capture-reconcile.ts
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import { startDevTemporal } from '../../src/dev/temporal';
import { reconcileWorkflowId } from '../../src/contracts/reconcile-contract';
import type { reconcileWorkflow } from '../../workflows/reconcile-workflow';
import { freePort } from '../helpers/ports';
import { startHarness } from '../helpers/harness';
import { writeFixtures } from './capture';

async function main() {
  const keys = `capture:${randomBytes(32).toString('base64')}`;
  process.env.TEMPORAL_PAYLOAD_KEYS = keys;
  const root = mkdtempSync(join(tmpdir(), 'wholesale-capture-reconcile-'));
  const pg = await startEmbeddedPostgres({ dataDir: join(root, 'pg'), port: await freePort(), database: 'postgres' });
  const temporal = await startDevTemporal({ port: await freePort(), uiPort: 0, namespace: 'default' });
  process.env.TEST_DATABASE_URL = pg.url;
  const h = await startHarness({
    TEMPORAL_ADDRESS: temporal.address,
    RECONCILE_GRACE_SECONDS: '0',
    RECONCILE_PAGE_SIZE: '2',
  });
  try {
    for (let i = 0; i < 3; i++) await h.account('1.00');
    const { accountId } = await h.account();
    const em = h.services.orm.em.fork();
    await em.execute(
      `insert into events (id, account_id, type, payload, dispatched_at) values ('evt_capture', ?, 'webhook.test', '{"message":"lost"}', now())`,
      [accountId],
    );
    await em.execute(
      `insert into webhook_deliveries (id, event_id, account_id, status, next_attempt_at) values ('whd_capture', 'evt_capture', ?, 'pending', now())`,
      [accountId],
    );

    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, dataConverter: dataConverter(parseKeyRing(keys)) });
    const base = reconcileWorkflowId(h.config.TEMPORAL_TASK_QUEUE);
    const start = (suffix: string, stepsPerRun?: number) =>
      client.workflow.start<typeof reconcileWorkflow>('reconcileWorkflow', {
        workflowId: `${base}-${suffix}`,
        taskQueue: h.config.TEMPORAL_TASK_QUEUE,
        args: [{ stepsPerRun }],
      });
    const repairing = await start('repairing');
    await repairing.result();
    const bounded = await start('bounded', 1);
    await bounded.result();
    const last = await bounded.describe();
    const closed = [
      { workflowId: repairing.workflowId, runId: (await repairing.describe()).runId, type: 'reconcileWorkflow' },
      { workflowId: bounded.workflowId, runId: bounded.firstExecutionRunId, type: 'reconcileWorkflow' },
      { workflowId: bounded.workflowId, runId: last.runId, type: 'reconcileWorkflow' },
    ];
    await writeFixtures(client, keys, ['reconcileWorkflow'], closed, { reconcile: 'test/replay/capture-reconcile.ts' });
    await connection.close();
  } finally {
    await h.stop();
    await temporal.stop();
    await pg.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
