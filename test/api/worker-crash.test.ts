import { payCheckout } from '../../src/providers/sandbox/sandbox-payments';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { client, eventually, postRetrying } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, PAYMENT_ENV } from '../helpers/payments';

// Issue 4 "Done when": a worker killed with SIGKILL while intent orders wait for payment, then
// restarted, still delivers the one paid meanwhile and expires the one left unpaid. The worker is
// the production `npm run worker` process; the API runs in this test.
let h: Harness;
const env = { ...PAYMENT_ENV, PAYMENT_WINDOW_SECONDS: '8' };

beforeAll(async () => {
  h = await startHarness(env, { worker: false });
});
afterAll(() => h?.stop());

const startWorker = () => startWorkerProcess(h, env);

test('kill -9 of the worker mid-wait: the paid order is delivered and the unpaid one expires after a restart', async () => {
  const { apiKey, accountId } = await h.account('0');
  const api = client(h.apiUrl, apiKey);
  let worker = startWorker();
  try {
    const paid = await postRetrying(api, '/orders', {
      externalOrderId: 'crash-paid',
      productId: 'prod_chatgpt_plus_1m',
      qty: 1,
      payment: 'intent',
    });
    const unpaid = await postRetrying(api, '/orders', {
      externalOrderId: 'crash-unpaid',
      productId: 'prod_chatgpt_plus_1m',
      qty: 1,
      payment: 'intent',
    });
    expect([paid.body.status, unpaid.body.status]).toEqual(['pending', 'pending']);

    worker.kill('SIGKILL');
    await new Promise((r) => worker.once('exit', r));
    // Paid while no worker runs: the callback's signal waits in Temporal.
    const checkout = await payCheckout(
      h.services.orm.em.fork(),
      h.config.PAYMENT_CALLBACK_SECRET,
      checkoutIdOf(paid.body.checkoutUrl),
    );
    await checkout!.callback;
    expect((await api.get(`/orders/${paid.body.orderId}`)).body.status).toBe('pending');

    worker = startWorker();
    const delivered = await eventually(
      async () => {
        const r = await api.get(`/orders/${paid.body.orderId}`);
        return r.body.status === 'delivered' ? r.body : undefined;
      },
      60_000,
      250,
    );
    expect(delivered.codes).toHaveLength(1);
    await eventually(
      async () => (await api.get(`/orders/${unpaid.body.orderId}`)).body.status === 'expired',
      60_000,
      250,
    );
    const desc = await h.services.temporal.client.workflow
      .getHandle(orderWorkflowId(accountId, 'crash-unpaid'))
      .describe();
    expect(['RUNNING', 'COMPLETED']).toContain(desc.status.name);
    expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.00');
  } finally {
    worker.kill('SIGKILL');
  }
}, 180_000);
