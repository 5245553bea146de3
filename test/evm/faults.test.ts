import { evmCheckout } from '../../src/db/evm-store';
import { evmCheckoutWorkflowId } from '../../src/contracts/evm-checkouts-contract';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { depositAddressOf, evmEnv, transfersOf, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { call, eventually, postRetrying } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, waitForOrderStatus } from '../helpers/payments';

// Issue 25 "Done when", the faults: the chain's only node frozen for 20 s mid-checkout (SIGSTOP:
// its socket takes requests and never answers), and the production worker killed with SIGKILL
// while a transfer waits for its confirmations. Real processes, real signals, real node.
const OUTAGE_MS = Number(process.env.EVM_OUTAGE_SECONDS ?? 20) * 1000;

describe('the RPC node stopped mid-checkout', () => {
  let chain: DevChain;
  let h: Harness;
  beforeAll(async () => {
    chain = await startDevChain();
    h = await startHarness({ ...evmEnv(chain, { confirmations: 2 }), PAYMENT_WINDOW_SECONDS: '600' });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
    await chain?.stop();
  });

  test('fails no order, shows in /readyz as degraded while the API stays ready, and credits the payment after it returns', async () => {
    const { api, accountId } = await reseller(h);
    const first = await api.post('/orders', {
      externalOrderId: 'outage-1',
      productId: 'prod_chatgpt_team_1m',
      qty: 1,
      payment: 'intent',
    });
    await chain.pay(await depositAddressOf(h, first.body.checkoutUrl), 'USDT', units6(first.body.amount));

    process.kill(chain.pid, 'SIGSTOP');
    const stoppedAt = Date.now();
    let resumed = false;
    try {
      // Orders are still taken: opening a checkout asks no node.
      const second = await api.post('/orders', {
        externalOrderId: 'outage-2',
        productId: 'prod_chatgpt_team_1m',
        qty: 1,
        payment: 'intent',
      });
      expect(second.status).toBe(200);
      const ready = await eventually(async () => {
        const r = await call(`${h.baseUrl}/readyz`);
        return r.body.degraded?.includes('chain:31337') ? r : undefined;
      });
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ ready: true, chains: { 31337: { state: 'down' } } });
      await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt))));
      const { derivation_index: index } = (await evmCheckout(
        h.services.orm.em.fork(),
        checkoutIdOf(first.body.checkoutUrl),
      ))!;
      const watch = await h.services.temporal.client.workflow
        .getHandle(evmCheckoutWorkflowId(first.body.orderId, index))
        .describe();
      expect(watch.status.name).toBe('RUNNING');
      expect((await api.get(`/orders/${first.body.orderId}`)).body.status).toBe('pending');

      process.kill(chain.pid, 'SIGCONT');
      resumed = true;
      await chain.pay(await depositAddressOf(h, second.body.checkoutUrl), 'USDT', units6(second.body.amount));
      await chain.mine(1);
      for (const order of [first.body, second.body])
        expect((await waitForOrderStatus(api, order.orderId, 'delivered')).codes).toHaveLength(1);
    } finally {
      if (!resumed) process.kill(chain.pid, 'SIGCONT');
    }
    await eventually(async () => ((await call(`${h.baseUrl}/readyz`)).body.degraded?.length === 0 ? true : undefined));
    const money = await expectLedgerMatchesBalance(h, accountId);
    expect(money).toMatchObject({ balance: '0.00', rows: [], spending: '50.00' });
  }, 120_000);
});

describe('the worker killed while a transfer waits for its confirmations', () => {
  let chain: DevChain;
  let h: Harness;
  let env: Record<string, string>;
  beforeAll(async () => {
    chain = await startDevChain();
    env = { ...evmEnv(chain, { confirmations: 3 }), PAYMENT_WINDOW_SECONDS: '600' };
    h = await startHarness(env, { worker: false });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
    await chain?.stop();
  });

  test('kill -9 and a new worker: the transfer is credited once', async () => {
    const { api, accountId } = await reseller(h);
    let worker = startWorkerProcess(h, env);
    try {
      const topup = await postRetrying(api, '/topup', {
        externalTopupId: 'kill-top',
        amount: '12.00',
        currency: 'USDT',
      });
      expect(topup.status).toBe(200);
      await chain.pay(await depositAddressOf(h, topup.body.checkoutUrl), 'USDT', units6('12.00'));
      await eventually(
        async () => ((await transfersOf(h, topup.body.checkoutUrl))[0]?.state === 'seen' ? true : undefined),
        60_000,
        100,
      );
      worker.kill('SIGKILL');
      await new Promise((r) => worker.once('exit', r));
      await chain.mine(2);
      worker = startWorkerProcess(h, env);
      await eventually(async () => (await api.get('/balance')).body.balance === '12.00', 90_000, 250);
      // Long enough for any second count to show.
      await chain.mine(2);
      await new Promise((r) => setTimeout(r, 3000));
      expect((await api.get('/balance')).body.balance).toBe('12.00');
      const money = await expectLedgerMatchesBalance(h, accountId);
      expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '12.00' })]);
      expect(await transfersOf(h, topup.body.checkoutUrl)).toEqual([
        expect.objectContaining({ state: 'confirmed', applied: 'payment' }),
      ]);
    } finally {
      worker.kill('SIGKILL');
    }
  }, 180_000);
});
