import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { OrderActivities } from '../activities/orders';
import { paymentNotifiedSignal, type PaymentWorkflowState } from '../src/temporal/payments';
import { awaitPayment, type Notices } from './payment';
import { handOffToProcurement } from './procurement-handoff';
import { updateFailure } from './update-failure';
import { AccountIdKey, ExternalOrderIdKey, FulfillmentStatusKey, OrderStatusKey } from '../src/temporal/search-attributes';
import {
  orderStateQuery,
  placeOrderUpdate,
  type OrderWorkflowInput,
  type OrderWorkflowState,
  type PlaceOrderRequest,
} from '../src/temporal/orders';

// The placement the caller waits for runs as a local activity in the update handler, so the
// update completes in the first workflow task ("early return"); an intent order's checkout call
// (bounded by PAYMENT_PROVIDER_TIMEOUT_MS) happens inside it. Only unexpected errors retry.
const { placeOrder } = proxyLocalActivities<OrderActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
});
// Postgres reads (idempotent): retried until the database answers, so an outage never fails the order.
const { orderStatus, findPlacedOrder } = proxyActivities<OrderActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
});

/**
 * One order, keyed by `order:<accountId>:<externalOrderId>`. Placement arrives as an update
 * (update-with-start), so concurrent retries of one externalOrderId meet here and are placed one
 * at a time; the placement activity itself is idempotent on the database's unique key. An intent
 * order then waits for its payment (callback signal or status sync), expires, and is still
 * delivered on a late payment; a callback for a closed run starts a new run with the signal.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowState> {
  const state: OrderWorkflowState = { orderId: null, status: 'new', fulfillmentStatus: null, placementAttempts: 0, lastError: null };
  const payment: PaymentWorkflowState = { orderId: null, status: 'new', syncs: 0, lastSyncError: null };
  const notices: Notices = { queue: [] };
  const placement = new Mutex();

  upsertSearchAttributes([
    { key: AccountIdKey, value: input.accountId },
    { key: ExternalOrderIdKey, value: input.externalOrderId },
    { key: OrderStatusKey, value: state.status },
  ]);

  const track = (status: string, fulfillmentStatus: string | null) => {
    state.status = status;
    state.fulfillmentStatus = fulfillmentStatus;
    upsertSearchAttributes([
      { key: OrderStatusKey, value: status },
      ...(fulfillmentStatus ? [{ key: FulfillmentStatusKey, value: fulfillmentStatus }] : []),
    ]);
  };

  setHandler(orderStateQuery, () => ({ ...state, payment }));
  setHandler(paymentNotifiedSignal, (notice) => {
    state.orderId ??= notice.orderId;
    notices.queue.push(notice);
  });
  // One placement at a time: updates that arrive together wait their turn (a flag checked by
  // `condition` let them all through, since every waiting condition is checked in one pass).
  setHandler(placeOrderUpdate, (request: PlaceOrderRequest) => placement.runExclusive(async () => {
    try {
      const res = await placeOrder({ ...input, ...request });
      if (res.outcome === 'rejected') {
        state.lastError = res.rejection.code;
        return res;
      }
      state.orderId = res.orderId;
      track(res.status, res.fulfillmentStatus);
      return res;
    } catch (err) {
      state.lastError = err instanceof Error ? err.message : String(err);
      throw updateFailure(err);
    } finally {
      state.placementAttempts++;
    }
  }));

  const answered = () => state.orderId !== null || (state.placementAttempts > 0 && !placement.isLocked() && allHandlersFinished());
  const recoverAfter = input.timing?.placementRecoverySeconds;
  if (recoverAfter && patched('placement-recovery')) {
    // An update admitted just before a Temporal restart can be lost after its placement committed
    // (the caller's retry is then answered from Postgres): with no placement answered in time,
    // Postgres says whether the order exists, and this workflow takes it on.
    while (!(await condition(answered, recoverAfter * 1000))) {
      if (placement.isLocked()) continue; // a placement is running: it will answer
      const found = await findPlacedOrder({ accountId: input.accountId, externalOrderId: input.externalOrderId });
      if (found) {
        state.orderId = found.orderId;
        track(found.status, found.fulfillmentStatus);
      }
      break;
    }
  } else {
    await condition(answered);
  }
  if (!state.orderId) {
    track('rejected', null);
  } else if (state.status === 'pending' || state.status === 'expired' || notices.queue.length > 0) {
    if (input.timing) await awaitPayment(state.orderId, input.timing, notices, payment);
    const after = await orderStatus(state.orderId);
    track(after.status, after.fulfillmentStatus);
  }
  // A paid direct-code order (balance, or intent once settled) is procured by its own workflow.
  if (state.orderId && state.status === 'paid' && state.fulfillmentStatus) {
    await handOffToProcurement({ orderId: state.orderId, accountId: input.accountId, externalOrderId: input.externalOrderId });
  }
  await condition(allHandlersFinished);
  return state;
}
