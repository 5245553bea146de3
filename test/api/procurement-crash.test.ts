import { once } from 'node:events';
import { procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { eventually, postRetrying } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import {
  eventsOfOrder,
  orderUntil,
  procurementState,
  reseller,
  storedCodes,
  supplierPurchases,
  workflowIds,
} from '../helpers/procurement';

// Issue 6 "Done when": a worker killed with SIGKILL mid-procurement, then restarted, finishes the
// order without buying anything twice. The worker is the production `npm run worker` process, so
// the sandbox supplier is scripted through SANDBOX_SUPPLIER_SCRIPT: one unit per call for two
// calls, then the rest, each call taking 1.5 s. The supplier's own record of its sales
// (sandbox_supplier_orders) is what "never twice" is checked against.
const PRODUCT = 'prod_apple_gift_card_us_25';
const env = {
  RATE_LIMIT_PER_MINUTE: '100000',
  PROCUREMENT_RETRY_BASE_SECONDS: '1',
  PROCUREMENT_RETRY_CAP_SECONDS: '1',
  PROCUREMENT_MAX_ROUNDS: '20',
  PROCUREMENT_DEADLINE_SECONDS: '300',
  SANDBOX_SUPPLIER_SCRIPT: JSON.stringify({ [PRODUCT]: { steps: [1, 1], then: 'all', delayMs: 1500 } }),
};
let h: Harness;

beforeAll(async () => {
  h = await startHarness(env, { worker: false });
});
afterAll(() => h?.stop());

const startWorker = () => startWorkerProcess(h, env);

test('kill -9 of the worker mid-procurement: a restarted worker delivers every unit, each bought once', async () => {
  const { api, accountId } = await reseller(h, '100.00');
  let worker = startWorker();
  try {
    const placed = await postRetrying(api, '/orders', { externalOrderId: 'crash-gift', productId: PRODUCT, qty: 4 });
    expect(placed.body).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing' });
    const orderId = placed.body.orderId;
    await orderUntil(api, orderId, (o) => o.fulfilledQuantity >= 1, { timeoutMs: 60_000 });

    worker.kill('SIGKILL');
    await once(worker, 'exit');
    const meanwhile = (await api.get(`/orders/${orderId}`)).body;
    expect(meanwhile).toMatchObject({ status: 'paid', fulfillmentStatus: 'processing', codes: [] });
    expect(meanwhile.fulfilledQuantity).toBeLessThan(4);

    worker = startWorker();
    const delivered = await orderUntil(api, orderId, (o) => o.status === 'delivered', { timeoutMs: 90_000 });
    expect(delivered).toMatchObject({ fulfillmentStatus: 'delivered', fulfilledQuantity: 4 });
    expect(delivered.codes).toHaveLength(4);

    // Every unit the supplier sold is in the order, and the order holds nothing else.
    const purchases = await supplierPurchases(h, orderId);
    expect(purchases.flatMap((p) => p.codes).sort()).toEqual([...delivered.codes].sort());
    expect((await storedCodes(h, orderId)).map((c) => c.code)).toEqual(delivered.codes);
    expect((await eventsOfOrder(h, orderId)).map((e) => e.type)).toEqual(['order.delivered']);
    expect(await procurementState(h, orderId)).toMatchObject({ phase: 'delivered', remaining: 0 });
    const runs = await eventually(async () => {
      const ids = await workflowIds(h, `WorkflowId = "${procurementWorkflowId(orderId)}"`);
      return ids.length > 0 ? ids : undefined;
    });
    expect(runs).toHaveLength(1);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('2.00');
  } finally {
    worker.kill('SIGKILL');
  }
}, 240_000);
