// Adds replay fixtures of evmCheckoutWorkflow and chainScanWorkflow (test/fixtures/histories) from
// real checkouts on a local chain: paid exactly, never paid, overpaid and paid again to the spent
// address, paid in part and then left; and the chain's scanner that read for them (terminated once
// they closed, as it never ends by itself). The fixtures already there stay: histories of
// earlier workflow code must go on replaying. The soak capture (./capture.ts) runs on the sandbox
// provider, so it leaves these fixtures alone, and this leaves its own.
//
//   node --import tsx test/replay/capture-evm.ts
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { chainScanWorkflowId } from '../../src/contracts/evm-checkouts-contract';
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import { startDevTemporal } from '../../src/dev/temporal';
import { startDevChain } from '../../src/dev/evm-chain';
import { freePort } from '../helpers/ports';
import { depositAddressOf, evmEnv, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness } from '../helpers/harness';
import { writeFixtures } from './capture';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const keys = `capture:${randomBytes(32).toString('base64')}`;
  process.env.TEMPORAL_PAYLOAD_KEYS = keys;
  const root = mkdtempSync(join(tmpdir(), 'wholesale-capture-evm-'));
  const pg = await startEmbeddedPostgres({ dataDir: join(root, 'pg'), port: await freePort(), database: 'postgres' });
  const temporal = await startDevTemporal({ port: await freePort(), uiPort: 0, namespace: 'default' });
  process.env.TEST_DATABASE_URL = pg.url;
  const chain = await startDevChain();
  const h = await startHarness({
    ...evmEnv(chain, { confirmations: 1 }),
    TEMPORAL_ADDRESS: temporal.address,
    PAYMENT_WINDOW_SECONDS: '4',
    LATE_PAYMENT_WATCH_SECONDS: '3',
    EVM_ADDRESS_WATCH_SECONDS: '3',
    EVM_ADDRESS_POLL_SECONDS: '1',
  });
  try {
    const { api } = await reseller(h);
    const place = async (id: string) =>
      (await api.post('/orders', { externalOrderId: id, productId: 'prod_chatgpt_plus_1m', qty: 1, payment: 'intent' }))
        .body;
    const exact = await place('capture-exact');
    await place('capture-unpaid');
    const over = await place('capture-over');
    const part = await place('capture-part');
    await chain.pay(await depositAddressOf(h, exact.checkoutUrl), 'USDT', units6(exact.amount));
    await chain.pay(await depositAddressOf(h, over.checkoutUrl), 'USDT', units6(exact.amount) + 1_500_000n);
    await chain.pay(await depositAddressOf(h, part.checkoutUrl), 'USDC', units6('1.00'));
    await sleep(3000);
    await chain.pay(await depositAddressOf(h, over.checkoutUrl), 'USDT', units6('2.00'));
    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, dataConverter: dataConverter(parseKeyRing(keys)) });
    let closed: { workflowId: string; runId: string; type: string }[] = [];
    for (let i = 0; i < 60 && closed.length < 4; i++) {
      await sleep(1000);
      closed = [];
      for await (const wf of client.workflow.list({
        query: `TaskQueue = "${h.config.TEMPORAL_TASK_QUEUE}" AND WorkflowType = "evmCheckoutWorkflow" AND ExecutionStatus = "Completed"`,
      })) {
        closed.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type });
      }
    }
    if (closed.length < 4) throw new Error(`only ${closed.length} checkout watches completed`);
    const scanner = client.workflow.getHandle(chainScanWorkflowId(h.config.TEMPORAL_TASK_QUEUE, chain.chainId));
    await scanner.terminate('captured');
    closed.push({ workflowId: scanner.workflowId, runId: (await scanner.describe()).runId, type: 'chainScanWorkflow' });
    await writeFixtures(
      client,
      keys,
      ['evmCheckoutWorkflow', 'chainScanWorkflow'],
      closed,
      { evm: 'test/replay/capture-evm.ts' },
      { add: true },
    );
    await connection.close();
  } finally {
    await h.stop();
    await chain.stop();
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
