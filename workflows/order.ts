import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { OrderActivities } from '../activities/orders';
import type { OrderCreateResponse } from '../src/services/orders';
import { AccountIdKey, ExternalOrderIdKey, FulfillmentStatusKey, OrderStatusKey } from '../src/temporal/search-attributes';
import {
  orderStateQuery,
  placeOrderUpdate,
  type OrderWorkflowInput,
  type OrderWorkflowState,
  type PlaceOrderRequest,
} from '../src/temporal/orders';

const { placeOrder } = proxyActivities<OrderActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 10 },
});

/**
 * One order, keyed by `order:<accountId>:<externalOrderId>`. Placement arrives as an update
 * (update-with-start), so concurrent retries of one externalOrderId meet here and are placed one
 * at a time; the placement activity itself is idempotent on the database's unique key.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowState> {
  const state: OrderWorkflowState = { orderId: null, status: 'new', fulfillmentStatus: null, placementAttempts: 0, lastError: null };
  let placing = false;

  upsertSearchAttributes([
    { key: AccountIdKey, value: input.accountId },
    { key: ExternalOrderIdKey, value: input.externalOrderId },
    { key: OrderStatusKey, value: state.status },
  ]);

  const track = (res: OrderCreateResponse) => {
    state.orderId = res.orderId;
    state.status = res.status;
    state.fulfillmentStatus = res.fulfillmentStatus;
    upsertSearchAttributes([
      { key: OrderStatusKey, value: res.status },
      ...(res.fulfillmentStatus ? [{ key: FulfillmentStatusKey, value: res.fulfillmentStatus }] : []),
    ]);
  };

  setHandler(orderStateQuery, () => state);
  setHandler(placeOrderUpdate, async (request: PlaceOrderRequest) => {
    await condition(() => !placing);
    placing = true;
    try {
      const res = await placeOrder({ ...input, ...request });
      track(res);
      return res;
    } catch (err) {
      state.lastError = err instanceof Error ? err.message : String(err);
      // Fail the update (the caller's request), not the workflow.
      if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) throw err.cause;
      throw ApplicationFailure.nonRetryable(state.lastError, 'internal_error');
    } finally {
      state.placementAttempts++;
      placing = false;
    }
  });

  await condition(() => state.placementAttempts > 0 && !placing && allHandlersFinished());
  if (!state.orderId) {
    state.status = 'rejected';
    upsertSearchAttributes([{ key: OrderStatusKey, value: state.status }]);
  }
  await condition(allHandlersFinished);
  return state;
}
