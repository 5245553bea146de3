import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import { OrderSchema, ProductSchema } from '../db/entities';
import { codeLabel, ordersPlaced } from '../metrics/registry';
import { ApiError } from '../domain/errors';
import type { TemporalHandle } from '../temporal/client';
import { apiErrorFromTemporal, isTemporalUnavailable } from '../temporal/errors';
import { orderWorkflowId, placeOrderUpdate, type Placement, type PlaceOrderRequest } from '../temporal/orders';
import type { PaymentTiming } from '../temporal/payments';
import { AccountIdKey, ExternalOrderIdKey } from '../temporal/search-attributes';
import { assertSameRequest, checkTestProductRules, createResponse, deliveredCodes, findByExternalId, type OrderCreateResponse, type PlaceOrderInput } from './orders';

export interface SubmitDeps {
  em: EntityManager;
  temporal: TemporalHandle;
  baseUrl: string;
  timing: PaymentTiming;
}

/**
 * POST /orders and MCP purchase_codes. A replay of a settled order is answered from Postgres;
 * anything else goes to the order workflow with update-with-start, where concurrent retries of
 * one externalOrderId meet and are placed once. The workflow answers with ids; the response,
 * codes and checkout link included, is read from Postgres.
 */
export async function submitOrder(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  try {
    const response = await submit(deps, input);
    if (!response.reused) ordersPlaced.inc({ product_type: response.deliveryType, payment: input.payment, outcome: response.status, code: '' });
    return response;
  } catch (err) {
    if (err instanceof ApiError && err.status < 500 && err.code !== 'invalid_input') {
      const product = await deps.em.fork().findOne(ProductSchema, { id: input.productId }).catch(() => null);
      ordersPlaced.inc({ product_type: product?.deliveryType ?? 'unknown', payment: input.payment, outcome: 'rejected', code: codeLabel(err.code) });
    }
    throw err;
  }
}

async function submit(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  checkTestProductRules(input);
  const existing = await findByExternalId(deps.em, input.accountId, input.externalOrderId);
  if (existing) {
    assertSameRequest(existing, input);
    const repairCheckout = input.payment === 'intent' && existing.status === 'pending' && !existing.checkoutUrl;
    if (!repairCheckout) {
      return createResponse(deps.em, existing, { baseUrl: deps.baseUrl, reused: true, withCheckout: input.payment === 'intent' });
    }
  }
  const placement = await placeThroughWorkflow(deps, input);
  if (placement.outcome === 'rejected') {
    throw new ApiError(placement.rejection.code, placement.rejection.message, placement.rejection.details);
  }
  // The order and, when the placement reports it delivered, its codes, read side by side
  // (createResponse reads them again if the order has moved on since).
  const delivered = placement.status === 'delivered';
  const [order, codes] = await Promise.all([
    deps.em.fork().findOneOrFail(OrderSchema, { id: placement.orderId }),
    delivered ? deliveredCodes(deps.em.fork(), { id: placement.orderId, status: 'delivered', deliveryType: null }) : undefined,
  ]);
  return createResponse(deps.em, order, {
    baseUrl: deps.baseUrl,
    reused: placement.reused,
    withCheckout: input.payment === 'intent',
    prefetched: codes ? { codesFor: 'delivered', codes } : undefined,
  });
}

async function placeThroughWorkflow(deps: SubmitDeps, input: PlaceOrderInput): Promise<Placement> {
  const { client, taskQueue } = deps.temporal;
  // One id for this request, kept across the retries below: Temporal answers a repeated update
  // id with the first outcome, and Postgres remembers which request placed the order.
  const placementId = randomUUID();
  const request: PlaceOrderRequest = {
    productId: input.productId,
    qty: input.qty,
    payment: input.payment,
    expectedUnitPrice: input.expectedUnitPrice,
    source: input.source,
    placementId,
  };
  // A workflow that closes between our update and its acceptance is retried: the next attempt
  // starts a new run whose placement finds the order by its unique key.
  for (let attempt = 1; ; attempt++) {
    const startWorkflowOperation = new WithStartWorkflowOperation('orderWorkflow', {
      workflowId: orderWorkflowId(input.accountId, input.externalOrderId),
      taskQueue,
      args: [{ accountId: input.accountId, externalOrderId: input.externalOrderId, timing: deps.timing }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: AccountIdKey, value: input.accountId },
        { key: ExternalOrderIdKey, value: input.externalOrderId },
      ],
    });
    try {
      // Bounded: with no worker polling (all killed, a deploy) the caller gets a retryable 503, not a hang.
      return await client.withDeadline(Date.now() + deps.temporal.placementDeadlineMs, () =>
        client.workflow.executeUpdateWithStart(placeOrderUpdate, { args: [request], updateId: placementId, startWorkflowOperation }));
    } catch (err) {
      const apiError = apiErrorFromTemporal(err);
      if (apiError) throw apiError;
      if (isTemporalUnavailable(err)) throw err;
      if (err instanceof WorkflowUpdateFailedError || attempt >= 3) {
        const placed = await findByExternalId(deps.em.fork(), input.accountId, input.externalOrderId);
        if (placed) throw new ApiError('duplicate_order', 'A concurrent request for this externalOrderId raced; look the order up by externalOrderId');
        throw err;
      }
    }
  }
}
