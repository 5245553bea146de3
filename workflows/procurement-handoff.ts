import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, startChild, upsertSearchAttributes } from '@temporalio/workflow';
import { AccountIdKey, ExternalOrderIdKey, FulfillmentStatusKey } from '../src/contracts/search-attributes';
import { procurementWorkflowId } from '../src/contracts/procurement-contract';
import { procurementWorkflow } from './procurement-workflow';

/**
 * Starts the procurement workflow of a paid direct-code order, `procure:<orderId>`, left running
 * when its parent finishes. A second start (a replay, a late payment callback re-running the
 * order workflow, a batch chunk retried) finds it running or done and starts nothing; only a run
 * that failed or was terminated may be started again, and it picks up from what Postgres holds.
 */
export async function startProcurement(order: {
  orderId: string;
  accountId: string;
  externalOrderId: string;
}): Promise<void> {
  try {
    await startChild(procurementWorkflow, {
      workflowId: procurementWorkflowId(order.orderId),
      args: [order],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      typedSearchAttributes: [
        { key: AccountIdKey, value: order.accountId },
        { key: ExternalOrderIdKey, value: order.externalOrderId },
      ],
    });
  } catch (err) {
    // Only "already started" means an earlier hand-off did it; anything else, a cancellation included, is rethrown.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** Since this patch, the order workflow never sets FulfillmentStatus on a paid order (see handOffToProcurement). */
export const handedOffStatusPatch = 'paid-order-status-left-to-procurement';

/**
 * The order workflow hands its paid direct-code order to procurement (startProcurement). From
 * here on only the procurement workflow carries FulfillmentStatus, so a query for stuck orders in
 * the Temporal UI lists each order once.
 */
export async function handOffToProcurement(order: {
  orderId: string;
  accountId: string;
  externalOrderId: string;
}): Promise<void> {
  await startProcurement(order);
  upsertSearchAttributes([{ key: FulfillmentStatusKey, value: null }]);
}
