import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  orderStateQuery,
  orderWorkflowId,
  placeOrderUpdate,
  type Placement,
  type PlaceOrderRequest,
} from '../../src/contracts/orders-contract';
import { paymentNotifiedSignal, type PaymentTiming } from '../../src/contracts/payments-contract';
import { procurementWorkflowId } from '../../src/contracts/procurement-contract';
import { AccountIdKey, ExternalOrderIdKey, OrderStatusKey } from '../../src/contracts/search-attributes';
import { keepHistory, timersOf, uniqueId, until, workflowEnv, type WorkflowEnv } from './env';

// orderWorkflow's state table with stubbed activities (issue 17): placement (and its races),
// rejection, payment by callback and by status sync (and a failing sync), expiry, late payment,
// a callback for a closed run, checkout repair, placement recovery from Postgres, the hand-off
// of a paid direct-code order (once), and placement failures.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const TIMING: PaymentTiming = { syncSeconds: 1, lateWatchSeconds: 3, latePollSeconds: 1 };
const ACCOUNT = '00000000-0000-4000-8000-000000000001';

const request = (over: Partial<PlaceOrderRequest> = {}): PlaceOrderRequest => ({
  productId: 'prod_x',
  qty: 1,
  payment: 'balance',
  source: 'rest',
  placementId: uniqueId('req'),
  ...over,
});

function place(
  taskQueue: string,
  externalOrderId: string,
  req: PlaceOrderRequest,
  timing?: PaymentTiming,
  /** Start it with the search attributes orderStarter sets. */
  withAttributes = false,
): Promise<Placement> {
  return env.client.workflow.executeUpdateWithStart(placeOrderUpdate, {
    args: [req],
    updateId: req.placementId,
    startWorkflowOperation: new WithStartWorkflowOperation('orderWorkflow', {
      workflowId: orderWorkflowId(ACCOUNT, externalOrderId),
      taskQueue,
      args: [{ accountId: ACCOUNT, externalOrderId, timing }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: withAttributes
        ? [
            { key: AccountIdKey, value: ACCOUNT },
            { key: ExternalOrderIdKey, value: externalOrderId },
            { key: OrderStatusKey, value: 'new' },
          ]
        : undefined,
    }),
  });
}

/** The patch ids a run recorded, in order. */
const patchesOf = (history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>) =>
  (history.events ?? []).flatMap((e) =>
    e.markerRecordedEventAttributes?.markerName === 'core_patch'
      ? [
          (
            JSON.parse(
              Buffer.from(
                e.markerRecordedEventAttributes.details?.['patch-data']?.payloads?.[0]?.data ?? [],
              ).toString(),
            ) as { id: string }
          ).id,
        ]
      : [],
  );

const result = (externalOrderId: string) =>
  env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, externalOrderId)).result();

/** The workflow's result and, through the `state` query (answered for a closed run too), its payment loop. */
async function outcome(externalOrderId: string) {
  const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, externalOrderId));
  const state = await handle.result();
  return { ...state, payment: (await handle.query(orderStateQuery)).payment };
}

/** A placement stub answering a new intent order, pending its payment. */
const pendingPlacement = (orderId: string) =>
  jest.fn(async () => ({ outcome: 'placed', orderId, reused: false, status: 'pending', fulfillmentStatus: null }));

/** Payment activities for an intent order whose window closes `windowMs` from now. */
function paymentStubs(windowMs: number, paidBySync = false) {
  let expiresAt = 0;
  let settled = false;
  return {
    paymentState: jest.fn(async () => {
      expiresAt ||= Date.now() + windowMs;
      return { status: settled ? 'delivered' : 'pending', checkoutId: 'chk', expiresAt, kind: 'purchase' };
    }),
    syncPayment: jest.fn(async () => (paidBySync ? 'paid' : 'pending')),
    settlePayment: jest.fn(async () => {
      if (settled) return 'already_settled';
      settled = true;
      return 'settled';
    }),
    expirePayment: jest.fn(async () => 'expired'),
  };
}

test.concurrent(
  'a balance placement is answered by the update and the workflow ends delivered, without any other activity',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('bal');
    const placeOrder = jest.fn(async () => ({
      outcome: 'placed',
      orderId: 'ord_1',
      reused: false,
      status: 'delivered',
      fulfillmentStatus: null,
    }));
    const orderStatus = jest.fn();
    await env.withWorker(tq, { placeOrder, orderStatus }, async () => {
      expect(await place(tq, id, request())).toEqual({
        outcome: 'placed',
        orderId: 'ord_1',
        reused: false,
        status: 'delivered',
        fulfillmentStatus: null,
      });
      expect(await result(id)).toMatchObject({
        orderId: 'ord_1',
        status: 'delivered',
        placementAttempts: 1,
        lastError: null,
      });
    });
    expect(placeOrder).toHaveBeenCalledTimes(1);
    expect(placeOrder.mock.calls[0]).toEqual([
      expect.objectContaining({
        accountId: ACCOUNT,
        externalOrderId: id,
        productId: 'prod_x',
        qty: 1,
        payment: 'balance',
      }),
    ]);
    expect(orderStatus).not.toHaveBeenCalled();
  },
);

test.concurrent("a rejected placement is the update's answer; the workflow ends as rejected", async () => {
  const tq = env.taskQueue();
  const id = uniqueId('rej');
  const rejected = { outcome: 'rejected', rejection: { code: 'insufficient_balance', message: 'too little' } };
  await env.withWorker(tq, { placeOrder: jest.fn(async () => rejected), orderStatus: jest.fn() }, async () => {
    expect(await place(tq, id, request())).toEqual(rejected);
    expect(await result(id)).toMatchObject({ orderId: null, status: 'rejected', lastError: 'insufficient_balance' });
  });
});

test.concurrent(
  'concurrent placements of one externalOrderId meet in one workflow and are placed one at a time',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('race');
    let inFlight = 0;
    let maxInFlight = 0;
    let placed = false;
    // An intent order keeps its run open (waiting for payment), so every request meets this run.
    const placeOrder = jest.fn(async () => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, 50));
      inFlight--;
      const reused = placed;
      placed = true;
      return { outcome: 'placed', orderId: 'ord_race', reused, status: 'pending', fulfillmentStatus: null };
    });
    const stubs = paymentStubs(30_000);
    await env.withWorker(
      tq,
      { placeOrder, orderStatus: jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null })), ...stubs },
      async () => {
        const answers = await Promise.all(
          Array.from({ length: 6 }, () => place(tq, id, request({ payment: 'intent' }), TIMING)),
        );
        expect(new Set(answers.map((p) => (p as { orderId: string }).orderId))).toEqual(new Set(['ord_race']));
        expect(answers.filter((p) => p.outcome === 'placed' && !p.reused)).toHaveLength(1);
        await env.client.workflow
          .getHandle(orderWorkflowId(ACCOUNT, id))
          .signal(paymentNotifiedSignal, { orderId: 'ord_race', status: 'paid' });
        expect(await result(id)).toMatchObject({ placementAttempts: 6, status: 'delivered' });
      },
    );
    expect(maxInFlight).toBe(1);
  },
);

test.concurrent('the same placement id twice is answered once (a retry after a lost reply)', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('dup');
  const placeOrder = pendingPlacement('ord_d');
  const stubs = paymentStubs(5_000);
  await env.withWorker(
    tq,
    { placeOrder, orderStatus: jest.fn(async () => ({ status: 'expired', fulfillmentStatus: null })), ...stubs },
    async () => {
      const req = request({ payment: 'intent' });
      const [a, b] = [await place(tq, id, req, TIMING), await place(tq, id, req, TIMING)];
      expect(a).toEqual(b);
    },
  );
  expect(placeOrder).toHaveBeenCalledTimes(1);
});

test.concurrent.each([
  ["the provider's callback (signal)", false, 'callback'],
  ['the status sync', true, 'status_sync'],
])(
  'an intent order paid within its window, confirmed by %s, is settled once and ends delivered',
  async (_name, paidBySync, path) => {
    const tq = env.taskQueue();
    const id = uniqueId('paid');
    const stubs = paymentStubs(20_000, paidBySync);
    const placeOrder = pendingPlacement('ord_p');
    const orderStatus = jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null }));
    await env.withWorker(tq, { placeOrder, orderStatus, ...stubs }, async () => {
      await place(tq, id, request({ payment: 'intent' }), TIMING);
      const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id));
      if (!paidBySync) await handle.signal(paymentNotifiedSignal, { orderId: 'ord_p', status: 'paid' });
      expect(await outcome(id)).toMatchObject({ orderId: 'ord_p', status: 'delivered', payment: { status: 'paid' } });
    });
    expect(stubs.settlePayment).toHaveBeenCalledTimes(1);
    expect(stubs.settlePayment.mock.calls[0]).toEqual(['ord_p', path]);
    expect(stubs.expirePayment).not.toHaveBeenCalled();
  },
);

test.concurrent(
  'an intent order left unpaid expires after its window, asking the provider at most once per sync interval',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('exp');
    // Long enough for two sync intervals even when the machine is busy (the tests run side by side).
    const stubs = paymentStubs(4_500);
    const placeOrder = pendingPlacement('ord_e');
    const orderStatus = jest.fn(async () => ({ status: 'expired', fulfillmentStatus: null }));
    const started = Date.now();
    await env.withWorker(tq, { placeOrder, orderStatus, ...stubs }, async () => {
      await place(tq, id, request({ payment: 'intent' }), { ...TIMING, lateWatchSeconds: 0 });
      expect(await outcome(id)).toMatchObject({ orderId: 'ord_e', status: 'expired', payment: { status: 'expired' } });
    });
    expect(stubs.expirePayment).toHaveBeenCalledTimes(1);
    expect(stubs.settlePayment).not.toHaveBeenCalled();
    // About one sync per second of the 4.5 s window: never more often than the interval allows.
    const elapsedS = (Date.now() - started) / 1000;
    expect(stubs.syncPayment.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(stubs.syncPayment.mock.calls.length).toBeLessThanOrEqual(Math.ceil(elapsedS) + 1);
  },
);

test.concurrent('a payment that arrives after expiry is still settled, as late', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('late');
  const stubs = paymentStubs(1_000);
  const placeOrder = pendingPlacement('ord_l');
  const orderStatus = jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null }));
  await env.withWorker(tq, { placeOrder, orderStatus, ...stubs }, async () => {
    await place(tq, id, request({ payment: 'intent' }), { ...TIMING, lateWatchSeconds: 30 });
    const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id));
    const deadline = Date.now() + 15_000;
    while (stubs.expirePayment.mock.calls.length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(stubs.expirePayment).toHaveBeenCalledTimes(1);
    await handle.signal(paymentNotifiedSignal, { orderId: 'ord_l', status: 'paid' });
    expect(await outcome(id)).toMatchObject({ status: 'delivered', payment: { status: 'paid' } });
  });
  expect(stubs.settlePayment.mock.calls).toEqual([['ord_l', 'late']]);
});

test.concurrent(
  'a payment callback that arrives while the order is read after its late watch is settled, as late, not left unread',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('finish');
    const stubs = paymentStubs(500);
    const placeOrder = pendingPlacement('ord_f');
    let notified!: () => void;
    const callback = new Promise<void>((r) => (notified = r));
    const orderStatus = jest.fn(async () => {
      // The first read, at the end of the late watch, is still under way when the callback comes.
      if (orderStatus.mock.calls.length === 1) {
        await callback;
        return { status: 'expired', fulfillmentStatus: null };
      }
      return { status: 'delivered', fulfillmentStatus: null };
    });
    await env.withWorker(tq, { placeOrder, orderStatus, ...stubs }, async () => {
      await place(tq, id, request({ payment: 'intent' }), { ...TIMING, lateWatchSeconds: 0 });
      const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id));
      const deadline = Date.now() + 15_000;
      while (orderStatus.mock.calls.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await handle.signal(paymentNotifiedSignal, { orderId: 'ord_f', status: 'paid' });
      notified();
      expect(await outcome(id)).toMatchObject({ status: 'delivered', payment: { status: 'paid' } });
      const history = await handle.fetchHistory();
      expect(patchesOf(history)).toContain('payment-notice-while-finishing');
      await keepHistory('orderWorkflow', handle.workflowId, history);
    });
    expect(stubs.settlePayment.mock.calls).toEqual([['ord_f', 'late']]);
    expect(orderStatus).toHaveBeenCalledTimes(2);
  },
);

test.concurrent(
  'a replay in intent mode of a pending order reaches the placement again (the checkout repair of rule 4)',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('repair');
    const stubs = paymentStubs(10_000);
    let calls = 0;
    const placeOrder = jest.fn(async () => ({
      outcome: 'placed',
      orderId: 'ord_r',
      reused: calls++ > 0,
      status: 'pending',
      fulfillmentStatus: null,
    }));
    await env.withWorker(
      tq,
      { placeOrder, orderStatus: jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null })), ...stubs },
      async () => {
        expect(await place(tq, id, request({ payment: 'intent' }), TIMING)).toMatchObject({ reused: false });
        expect(await place(tq, id, request({ payment: 'intent' }), TIMING)).toMatchObject({
          orderId: 'ord_r',
          reused: true,
        });
        await env.client.workflow
          .getHandle(orderWorkflowId(ACCOUNT, id))
          .signal(paymentNotifiedSignal, { orderId: 'ord_r', status: 'paid' });
        await result(id);
      },
    );
    expect(placeOrder).toHaveBeenCalledTimes(2);
  },
);

test.concurrent(
  'a placement that keeps finding the database unavailable fails the update as a retryable service_unavailable',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('pgdown');
    // What the safe-failure interceptor makes of a database outage (src/temporal/safe-failures.ts).
    const placeOrder = jest.fn(async () => {
      throw ApplicationFailure.retryable('The database is unavailable; retry shortly', 'service_unavailable');
    });
    await env.withWorker(tq, { placeOrder, orderStatus: jest.fn() }, async () => {
      const err = await place(tq, id, request()).catch((e) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(err.cause).toMatchObject({
        type: 'service_unavailable',
        message: 'The database is unavailable; retry shortly',
      });
    });
    expect(placeOrder.mock.calls.length).toBe(5);
  },
);

test.concurrent(
  'an unexpected placement failure is retried, then fails the update (not the workflow) as internal_error',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('boom');
    const placeOrder = jest.fn(async () => {
      throw new Error('database went away');
    });
    await env.withWorker(tq, { placeOrder, orderStatus: jest.fn() }, async () => {
      const err = await place(tq, id, request()).catch((e) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(err.cause).toMatchObject({ type: 'internal_error' });
      expect(await result(id)).toMatchObject({
        orderId: null,
        status: 'rejected',
        lastError: expect.stringMatching(/database went away/),
      });
    });
    expect(placeOrder.mock.calls.length).toBe(5);
  },
  60_000,
);

test.concurrent(
  'a failing status sync is recorded and asked again at the next tick; the payment still settles',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('sync');
    const stubs = paymentStubs(20_000, true);
    let failed = false;
    const syncPayment = jest.fn(async () => {
      if (failed) return 'paid';
      failed = true;
      throw ApplicationFailure.nonRetryable('provider status endpoint answered 502', 'ProviderDown');
    });
    const placeOrder = pendingPlacement('ord_s');
    await env.withWorker(
      tq,
      {
        placeOrder,
        orderStatus: jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null })),
        ...stubs,
        syncPayment,
      },
      async () => {
        await place(tq, id, request({ payment: 'intent' }), TIMING);
        expect(await outcome(id)).toMatchObject({
          status: 'delivered',
          payment: { status: 'paid', syncs: 2, lastSyncError: expect.any(String) },
        });
      },
    );
    expect(stubs.settlePayment.mock.calls).toEqual([['ord_s', 'status_sync']]);
  },
);

test.concurrent(
  'a callback for a closed run starts a new run with the signal, which settles the payment as late',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('cb');
    const stubs = paymentStubs(1_000);
    // Postgres shows the order expired: its first run closed before the payment came.
    const paymentState = jest.fn(async () => ({
      status: 'expired',
      checkoutId: 'chk',
      expiresAt: Date.now() - 1_000,
      kind: 'purchase',
    }));
    const placeOrder = jest.fn();
    await env.withWorker(
      tq,
      {
        placeOrder,
        orderStatus: jest.fn(async () => ({ status: 'delivered', fulfillmentStatus: null })),
        ...stubs,
        paymentState,
      },
      async () => {
        await env.client.workflow.signalWithStart('orderWorkflow', {
          workflowId: orderWorkflowId(ACCOUNT, id),
          taskQueue: tq,
          args: [{ accountId: ACCOUNT, externalOrderId: id, timing: TIMING }],
          signal: paymentNotifiedSignal,
          signalArgs: [{ orderId: 'ord_cb', status: 'paid' }],
        });
        expect(await outcome(id)).toMatchObject({
          orderId: 'ord_cb',
          status: 'delivered',
          payment: { status: 'paid' },
        });
      },
    );
    expect(placeOrder).not.toHaveBeenCalled();
    expect(stubs.settlePayment.mock.calls).toEqual([['ord_cb', 'late']]);
  },
);

test.concurrent.each([
  [
    'finds the order placed, and takes it on',
    { orderId: 'ord_found', status: 'delivered', fulfillmentStatus: null },
    { orderId: 'ord_found', status: 'delivered' },
  ],
  ['finds nothing, and ends as rejected', null, { orderId: null, status: 'rejected' }],
] as const)(
  'with no placement answered in the recovery time, the workflow asks Postgres: it %s',
  async (_name, found, expected) => {
    const tq = env.taskQueue();
    const id = uniqueId('recover');
    const findPlacedOrder = jest.fn(async () => found);
    const placeOrder = jest.fn();
    await env.withWorker(tq, { placeOrder, findPlacedOrder, orderStatus: jest.fn() }, async () => {
      // Started as update-with-start would, but the placement update was lost (a Temporal restart).
      await env.client.workflow.start('orderWorkflow', {
        workflowId: orderWorkflowId(ACCOUNT, id),
        taskQueue: tq,
        args: [{ accountId: ACCOUNT, externalOrderId: id, timing: { ...TIMING, placementRecoverySeconds: 1 } }],
      });
      expect(await result(id)).toMatchObject(expected);
    });
    expect(findPlacedOrder.mock.calls).toEqual([[{ accountId: ACCOUNT, externalOrderId: id }]]);
    expect(placeOrder).not.toHaveBeenCalled();
  },
);

test.concurrent(
  'a placement that arrives while the recovery asks Postgres, and answers after the run settled for no order, is still followed to its expiry',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('lateplace');
    const stubs = paymentStubs(1_000);
    let placementStarted!: () => void;
    const started = new Promise<void>((r) => (placementStarted = r));
    // The placement outlasts the workflow task (2 s here, so the worker heartbeats it at 1.6 s): the
    // recovery's "nothing in Postgres" reaches the run while the placement is still writing.
    const placeOrder = jest.fn(async () => {
      placementStarted();
      await new Promise((r) => setTimeout(r, 4_000));
      return { outcome: 'placed', orderId: 'ord_lp', reused: false, status: 'pending', fulfillmentStatus: null };
    });
    const orderStatus = jest.fn(async () => ({ status: 'expired', fulfillmentStatus: null }));
    const handle = env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id));
    let placed: Promise<Placement> | undefined;
    // Postgres is asked first (the update was lost); the caller's retry arrives while it answers.
    const findPlacedOrder = jest.fn(async () => {
      placed = handle.executeUpdate(placeOrderUpdate, { args: [request({ payment: 'intent' })] });
      await started;
      return null;
    });
    await env.withWorker(tq, { placeOrder, findPlacedOrder, orderStatus, ...stubs }, async () => {
      await env.client.workflow.start('orderWorkflow', {
        workflowId: orderWorkflowId(ACCOUNT, id),
        taskQueue: tq,
        workflowTaskTimeout: '2 seconds',
        args: [
          {
            accountId: ACCOUNT,
            externalOrderId: id,
            timing: { ...TIMING, lateWatchSeconds: 0, placementRecoverySeconds: 1 },
          },
        ],
      });
      await until(() => placed !== undefined, 'the retried placement');
      expect(await placed).toMatchObject({ outcome: 'placed', orderId: 'ord_lp' });
      expect(await outcome(id)).toMatchObject({ orderId: 'ord_lp', status: 'expired', payment: { status: 'expired' } });
    });
    expect(findPlacedOrder).toHaveBeenCalledTimes(1);
    expect(stubs.expirePayment.mock.calls).toEqual([['ord_lp']]);
    // Under its own patch (recorded on this branch only), and the history replays.
    const history = await handle.fetchHistory();
    expect(patchesOf(history)).toEqual(['placement-in-flight', 'late-placement-followed']);
    await env.replay(history, orderWorkflowId(ACCOUNT, id));
    await keepHistory('orderWorkflow', orderWorkflowId(ACCOUNT, id), history);
  },
  30_000,
);

test.concurrent(
  'a placement in flight when the run starts is awaited with no recovery timer, under its patch, and the history replays',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('inflight');
    const placeOrder = jest.fn(async () => ({
      outcome: 'placed',
      orderId: 'ord_if',
      reused: false,
      status: 'delivered',
      fulfillmentStatus: null,
    }));
    const findPlacedOrder = jest.fn();
    await env.withWorker(tq, { placeOrder, findPlacedOrder, orderStatus: jest.fn() }, async () => {
      expect(await place(tq, id, request(), { ...TIMING, placementRecoverySeconds: 1 })).toMatchObject({
        outcome: 'placed',
        orderId: 'ord_if',
      });
      expect(await result(id)).toMatchObject({ orderId: 'ord_if', status: 'delivered', placementAttempts: 1 });
    });
    expect(findPlacedOrder).not.toHaveBeenCalled();

    const history = await env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id)).fetchHistory();
    const events = history.events ?? [];
    expect(await timersOf({ fetchHistory: async () => history })).toEqual([]);
    expect(patchesOf(history)).toEqual(['placement-in-flight']);
    // The patch's own TemporalChangeVersion, and the placed status; nothing upserted at the start.
    const upserted = events.flatMap((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
    );
    expect(upserted.sort()).toEqual(['OrderStatus', 'TemporalChangeVersion']);

    // The run's own history replays on the code that made it (the fixtures cover older runs).
    await env.replay(history, orderWorkflowId(ACCOUNT, id));
  },
  30_000,
);

test.concurrent(
  'a run started with its search attributes, as orderStarter starts it, awaits the placement in flight with no patch marker, and the history replays',
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('inflight-sa');
    const placeOrder = jest.fn(async () => ({
      outcome: 'placed',
      orderId: 'ord_ifs',
      reused: false,
      status: 'delivered',
      fulfillmentStatus: null,
    }));
    const findPlacedOrder = jest.fn();
    await env.withWorker(tq, { placeOrder, findPlacedOrder, orderStatus: jest.fn() }, async () => {
      const placed = await place(tq, id, request(), { ...TIMING, placementRecoverySeconds: 1 }, true);
      expect(placed).toMatchObject({ outcome: 'placed', orderId: 'ord_ifs' });
      expect(await result(id)).toMatchObject({ orderId: 'ord_ifs', status: 'delivered', placementAttempts: 1 });
    });
    expect(findPlacedOrder).not.toHaveBeenCalled();

    const history = await env.client.workflow.getHandle(orderWorkflowId(ACCOUNT, id)).fetchHistory();
    const events = history.events ?? [];
    expect(await timersOf({ fetchHistory: async () => history })).toEqual([]);
    expect(patchesOf(history)).toEqual([]);
    // Only the placed status: no TemporalChangeVersion, and nothing the start already set.
    const upserted = events.flatMap((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
    );
    expect(upserted).toEqual(['OrderStatus']);

    await env.replay(history, orderWorkflowId(ACCOUNT, id));
    await keepHistory('orderWorkflow', orderWorkflowId(ACCOUNT, id), history);
  },
  30_000,
);

/** Procurement activities for a child that finds the order delivered (or waiting for support) and ends (or waits). */
const procurementStubs = (fulfillmentStatus: string) => ({
  beginProcurement: jest.fn(async () => ({
    facts: {
      status: fulfillmentStatus === 'delivered' ? 'delivered' : 'paid',
      fulfillmentStatus,
      qty: 1,
      fulfilledQuantity: 0,
    },
    timing: { retryBaseSeconds: 0, retryCapSeconds: 1, maxRounds: 1, deadlineSeconds: 60 },
  })),
});

test.concurrent(
  "a paid direct-code order is handed to its own procurement workflow, which outlives the order's",
  async () => {
    const tq = env.taskQueue();
    const id = uniqueId('direct');
    const orderId = uniqueId('ord_direct');
    const placeOrder = jest.fn(async () => ({
      outcome: 'placed',
      orderId,
      reused: false,
      status: 'paid',
      fulfillmentStatus: 'processing',
    }));
    const procurement = procurementStubs('delivered');
    env.routeChild(procurementWorkflowId(orderId), tq);
    await env.withWorker(tq, { placeOrder, orderStatus: jest.fn(), ...procurement }, async () => {
      await place(tq, id, request());
      expect(await result(id)).toMatchObject({ orderId, status: 'paid', fulfillmentStatus: 'processing' });
      expect(await env.client.workflow.getHandle(procurementWorkflowId(orderId)).result()).toMatchObject({
        orderId,
        phase: 'delivered',
      });
    });
    expect(procurement.beginProcurement.mock.calls).toEqual([[orderId]]);
  },
);

test.concurrent('a second hand-off finds the procurement running and starts nothing', async () => {
  const tq = env.taskQueue();
  const id = uniqueId('direct');
  const orderId = uniqueId('ord_direct');
  const placeOrder = jest.fn(async () => ({
    outcome: 'placed',
    orderId,
    reused: true,
    status: 'paid',
    fulfillmentStatus: 'needs_attention',
  }));
  const procurement = procurementStubs('needs_attention');
  await env.withWorker(tq, { placeOrder, orderStatus: jest.fn(), ...procurement }, async () => {
    const running = await env.client.workflow.start('procurementWorkflow', {
      workflowId: procurementWorkflowId(orderId),
      taskQueue: tq,
      args: [{ orderId, accountId: ACCOUNT, externalOrderId: id }],
    });
    await place(tq, id, request());
    expect(await result(id)).toMatchObject({ orderId, status: 'paid' });
    const latest = await env.client.workflow.getHandle(procurementWorkflowId(orderId)).describe();
    expect({ runId: latest.runId, status: latest.status.name }).toEqual({
      runId: running.firstExecutionRunId,
      status: 'RUNNING',
    });
    // The running procurement's own first activity, before it is ended (on a loaded machine the
    // order can be placed and handed off before that run's first task has run).
    await until(() => procurement.beginProcurement.mock.calls.length > 0, 'the running procurement begins');
    await running.terminate('test done');
  });
  expect(procurement.beginProcurement).toHaveBeenCalledTimes(1);
});
