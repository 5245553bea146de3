import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../domain/errors';
import type { TemporalHandle } from '../temporal/client';
import { apiErrorFromTemporal } from '../temporal/errors';
import { orderWorkflowId, placeOrderUpdate } from '../temporal/orders';
import type { PaymentTiming } from '../temporal/payments';
import { AccountIdKey, ExternalOrderIdKey } from '../temporal/search-attributes';
import { assertSameRequest, checkTestProductRules, createResponse, findByExternalId, type OrderCreateResponse, type PlaceOrderInput } from './orders';

export interface SubmitDeps {
  em: EntityManager;
  temporal: TemporalHandle;
  baseUrl: string;
  timing: PaymentTiming;
}

/**
 * POST /orders and MCP purchase_codes. A replay of a settled order is answered from Postgres;
 * anything else goes to the order workflow with update-with-start, where concurrent retries of
 * one externalOrderId meet and are placed once.
 */
export async function submitOrder(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  checkTestProductRules(input);
  const existing = await findByExternalId(deps.em, input.accountId, input.externalOrderId);
  if (existing) {
    assertSameRequest(existing, input);
    const repairCheckout = input.payment === 'intent' && existing.status === 'pending' && !existing.checkoutUrl;
    if (!repairCheckout) {
      return createResponse(deps.em, existing, { baseUrl: deps.baseUrl, reused: true, withCheckout: input.payment === 'intent' });
    }
  }
  return placeThroughWorkflow(deps, input);
}

async function placeThroughWorkflow(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  const { client, taskQueue } = deps.temporal;
  const request = {
    productId: input.productId,
    qty: input.qty,
    payment: input.payment,
    expectedUnitPrice: input.expectedUnitPrice,
    source: input.source,
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
      return await client.workflow.executeUpdateWithStart(placeOrderUpdate, { args: [request], startWorkflowOperation });
    } catch (err) {
      const apiError = apiErrorFromTemporal(err);
      if (apiError) throw apiError;
      if (err instanceof WorkflowUpdateFailedError || attempt >= 3) {
        const placed = await findByExternalId(deps.em.fork(), input.accountId, input.externalOrderId);
        if (placed) throw new ApiError('duplicate_order', 'A concurrent request for this externalOrderId raced; look the order up by externalOrderId');
        throw err;
      }
    }
  }
}
