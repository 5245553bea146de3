import { defaultPayloadConverter } from '@temporalio/common';
import { evmCheckout } from '../../src/db/evm-store';
import { evmCheckoutWorkflowId, type EvmCheckoutWorkflowInput } from '../../src/contracts/evm-checkouts-contract';
import { reconcileScheduleId } from '../../src/contracts/reconcile-contract';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { evmEnv, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { decodeHistory, rawHistory } from '../helpers/history';
import { eventually } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { checkoutIdOf, waitForOrderStatus } from '../helpers/payments';

// Issue 27 item 1, PAYMENT_PROVIDER=evm: an EVM checkout still open whose watch Temporal lost is
// watched again. Without its watch nothing reads the chain for that address (the order's own
// status sync reads what the watch recorded), so the payment delivers the order only because the
// reconciler, on its schedule, started the watch again, with the checkout's own deadline.
const PERIOD_S = 2;
const GRACE_S = 1;
let chain: DevChain;
let h: Harness;

beforeAll(async () => {
  chain = await startDevChain();
  h = await startHarness({
    ...evmEnv(chain, { confirmations: 2 }),
    PAYMENT_WINDOW_SECONDS: '120',
    RECONCILE_SECONDS: String(PERIOD_S),
    RECONCILE_GRACE_SECONDS: String(GRACE_S),
  });
}, 120_000);
afterAll(async () => {
  await h?.services.temporal.client.schedule
    .getHandle(reconcileScheduleId(h.config.TEMPORAL_TASK_QUEUE))
    .delete()
    .catch(() => undefined);
  await h?.stop();
  await chain?.stop();
});

/** The input the current run of `workflowId` was started with, decoded as an operator sees it. */
async function watchInput(workflowId: string): Promise<EvmCheckoutWorkflowInput> {
  const history = await decodeHistory(
    await rawHistory(h.services.temporal.client, workflowId),
    h.config.TEMPORAL_PAYLOAD_KEYS,
  );
  const [input] = history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads!;
  return defaultPayloadConverter.fromPayload(input);
}

test('a pending checkout whose watch was terminated: the watch is started again, its window counted from the order expiresAt, and the payment delivers the order, charged once', async () => {
  const { api, accountId } = await reseller(h);
  const placed = await api.post('/orders', {
    externalOrderId: 'rec-evm',
    productId: 'prod_chatgpt_team_1m',
    qty: 1,
    payment: 'intent',
  });
  expect(placed.body.status).toBe('pending');
  const orderId: string = placed.body.orderId;
  const checkout = (await evmCheckout(h.services.orm.em.fork(), checkoutIdOf(placed.body.checkoutUrl)))!;
  const watchId = evmCheckoutWorkflowId(orderId, checkout.derivation_index);
  await h.services.temporal.client.workflow.getHandle(watchId).terminate('test: Temporal lost this workflow');
  const lostAt = Date.now();

  const subjectId = `${orderId}:${checkout.derivation_index}`;
  const [repair] = await eventually(
    async () => {
      const rows = await h.services.orm.em
        .fork()
        .execute<{ kind: string; action: string; workflow_id: string; created_at: Date }[]>(
          'select kind, action, workflow_id, created_at from reconciler_repairs where subject_id = ?',
          [subjectId],
        );
      return rows.length > 0 ? rows : undefined;
    },
    20_000,
    200,
    'the watch repaired',
  );
  expect(repair).toMatchObject({ kind: 'evm_checkout', action: 'restarted', workflow_id: watchId });
  expect(new Date(repair.created_at).getTime() - lostAt).toBeLessThan((GRACE_S + PERIOD_S) * 1000 + 6000);
  // The repair names the watch as the watch is named: never by the checkout id (half of its URL).
  expect(JSON.stringify(repair)).not.toContain(checkout.id);
  // The new watch counts its window from the order's deadline, not from its own start: it stops
  // when the lost one would have (its late and address watches follow from expiresAt).
  const [order] = await h.services.orm.em
    .fork()
    .execute<{ expires_at: Date }[]>('select expires_at from orders where id = ?', [orderId]);
  expect((await watchInput(watchId)).expiresAt).toBe(new Date(order.expires_at).getTime());

  await chain.pay(checkout.address, 'USDT', units6(placed.body.amount));
  await chain.mine(2);
  const delivered = await waitForOrderStatus(api, orderId, 'delivered');
  expect(delivered.codes).toHaveLength(1);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money).toMatchObject({ balance: '0.00', rows: [], spending: placed.body.amount });
  const repairs = await h.services.orm.em
    .fork()
    .execute('select 1 from reconciler_repairs where subject_id = ?', [subjectId]);
  expect(repairs).toHaveLength(1);
  // The chain's payment is on record beside the transfers, closed when the order settled, so no
  // reconciler pass takes it for a payment still waiting for its order.
  const confirmations = await h.services.orm.em
    .fork()
    .execute(
      'select checkout_id, source, settled_at is not null as settled from payment_confirmations where order_id = ?',
      [orderId],
    );
  expect(confirmations).toEqual([{ checkout_id: checkout.id, source: 'chain', settled: true }]);
});
