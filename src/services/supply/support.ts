import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { EntityManager } from '@mikro-orm/postgresql';
import { OrderSchema, type Order } from '../../db/entities/all-entities';
import { ledgerAmountOf } from '../../db/ledger-store';
import { supplierPurchasesOf, type SupplierPurchaseRow } from '../../db/procurement-store';
import { supportActionsOf } from '../../db/support-store';
import { ApiError } from '../../domain/errors';
import { fromDb, toDecimal } from '../../domain/money';
import type { TemporalHandle } from '../../temporal/client';
import {
  deliverManuallyUpdate,
  procurementStateQuery,
  procurementWorkflowId,
  refundUpdate,
  resumeUpdate,
  type DeliverRequest,
  type ProcurementState,
  type SupportActionName,
  type SupportRequest,
} from '../../contracts/procurement-contract';
import { procurementStarter } from '../../temporal/starters';
import { cleanManualCodes, dropManualCodes, stageManualCodes } from './manual-codes';
import { boughtFromSupplier } from './procurement';
import { carryOutSupportRequest, requestSupportAction } from './support-requests';

// Support tooling for direct-code orders (spec 3.2 needs_attention), shared by the admin HTTP API
// and `npx wholesale support ...`. Lists come from Postgres; actions go to the order's
// procurement workflow as updates and return once the workflow has applied them.

export interface SupportDeps {
  em: EntityManager;
  temporal: TemporalHandle;
}

export const FULFILLMENT_STATUSES = [
  'awaiting_payment',
  'processing',
  'needs_attention',
  'delivered',
  'expired',
  'refunded',
] as const;
export type FulfillmentStatus = (typeof FULFILLMENT_STATUSES)[number];

const unix = (d?: Date | null) => (d ? Math.floor(new Date(d).getTime() / 1000) : null);

export function supportOrderView(o: Order) {
  return {
    orderId: o.id,
    accountId: o.accountId,
    externalOrderId: o.externalOrderId ?? null,
    productId: o.productId ?? null,
    qty: o.qty,
    fulfilledQuantity: o.fulfilledQuantity,
    remaining: Math.max(0, o.qty - o.fulfilledQuantity),
    status: o.status,
    fulfillmentStatus: o.fulfillmentStatus ?? null,
    errorCode: o.errorCode ?? null,
    resolution: o.resolution ?? null,
    payment: o.payment,
    unitPrice: toDecimal(fromDb(o.unitPrice)),
    amount: toDecimal(fromDb(o.amount)),
    createdAt: unix(o.createdAt)!,
    paidAt: unix(o.paidAt),
    updatedAt: unix(o.updatedAt)!,
  };
}
export type SupportOrderView = ReturnType<typeof supportOrderView>;

/** Direct-code orders by fulfillment status, longest waiting first (no codes). */
export async function listSupportOrders(
  em: EntityManager,
  q: { fulfillmentStatus?: FulfillmentStatus; accountId?: string; limit: number },
): Promise<SupportOrderView[]> {
  const where: Record<string, unknown> = { kind: 'purchase', deliveryType: 'direct_code' };
  if (q.fulfillmentStatus) where.fulfillmentStatus = q.fulfillmentStatus;
  if (q.accountId) where.accountId = q.accountId;
  const rows = await em.find(OrderSchema, where, { orderBy: { updatedAt: 'asc', id: 'asc' }, limit: q.limit });
  return rows.map(supportOrderView);
}

async function directCodeOrder(em: EntityManager, orderId: string): Promise<Order> {
  const order = await em.findOne(OrderSchema, { id: orderId, kind: 'purchase', deliveryType: 'direct_code' });
  if (!order) throw new ApiError('not_found', `Direct-code order ${orderId} not found`);
  return order;
}

/** A purchase from the supplier, as support reads it: what was bought, under which transaction, at what cost. */
function supplierPurchaseView(p: SupplierPurchaseRow) {
  return {
    supplier: p.supplier,
    supplierProductId: p.supplier_product_id,
    transactionId: p.transaction_id,
    state: p.state,
    supplierStatus: p.supplier_status,
    requested: p.requested,
    quantity: p.quantity,
    units: p.units,
    unitCost: p.unit_cost,
    totalCost: p.total_cost,
    currency: p.currency,
    faceValue: p.face_value,
    faceCurrency: p.face_currency,
    error: p.error,
    createdAt: unix(p.created_at)!,
    updatedAt: unix(p.updated_at)!,
  };
}

/**
 * One order for support: its state in Postgres, what was bought from the supplier for it, every
 * support action, and the workflow's own view.
 */
export async function supportOrderDetail(deps: SupportDeps, orderId: string) {
  const order = await directCodeOrder(deps.em, orderId);
  const actions = await supportActionsOf(deps.em, orderId);
  const purchases = await supplierPurchasesOf(deps.em, orderId);
  let workflow: ProcurementState | null;
  try {
    workflow = await deps.temporal.client.workflow
      .getHandle(procurementWorkflowId(orderId))
      .query(procurementStateQuery);
  } catch {
    workflow = null; // never handed to procurement (unpaid, expired) or its history is gone
  }
  return {
    ...supportOrderView(order),
    supplierPurchases: purchases.map(supplierPurchaseView),
    actions: actions.map((a) => ({
      action: a.action,
      actor: a.actor,
      reason: a.reason,
      payload: a.payload,
      createdAt: unix(a.created_at)!,
    })),
    workflow,
  };
}

function who(req: SupportRequest): SupportRequest {
  const actor = req.actor?.trim();
  const reason = req.reason?.trim();
  if (!actor || !reason) throw new ApiError('invalid_input', 'Support actions need who (actor) and why (reason)');
  return { actor, reason };
}

export interface SupportOutcome {
  action: SupportActionName;
  order: SupportOrderView;
  /**
   * For a refund: the undelivered units and the amount credited to the balance, and what was
   * bought and what was not: units ordered and delivered, and each supplier purchase.
   */
  refund: {
    units: number;
    amount: string;
    requested: number;
    delivered: number;
    supplierPurchases: ReturnType<typeof boughtFromSupplier>[];
  } | null;
}

/**
 * Sends a support action to `procure:<orderId>` and waits until it is applied. Update-with-start
 * also reaches an order whose procurement run is gone (failed or terminated): a new run picks up
 * from Postgres and applies the action.
 */
async function act<A extends SupportRequest>(
  deps: SupportDeps,
  orderId: string,
  action: SupportActionName,
  update: typeof resumeUpdate | typeof refundUpdate | typeof deliverManuallyUpdate,
  request: A & { batchId?: string },
): Promise<SupportOutcome> {
  const order = await directCodeOrder(deps.em, orderId);
  if (
    order.status !== 'paid' ||
    (order.fulfillmentStatus !== 'needs_attention' && order.fulfillmentStatus !== 'processing')
  ) {
    throw new ApiError(
      'invalid_input',
      `Order ${orderId} is not waiting for support (status ${order.status}, fulfillmentStatus ${order.fulfillmentStatus ?? 'null'})`,
      {
        status: order.status,
        fulfillmentStatus: order.fulfillmentStatus ?? null,
      },
    );
  }
  // On record first: the workflow's activity acts on this row, not on the message.
  const requestId = await requestSupportAction(deps.em.fork(), {
    subjectId: orderId,
    action,
    actor: request.actor,
    reason: request.reason,
    batchId: request.batchId,
  });
  const starter = procurementStarter(deps.temporal, {
    orderId,
    accountId: order.accountId,
    externalOrderId: order.externalOrderId ?? null,
  });
  await carryOutSupportRequest(deps.em.fork(), requestId, () =>
    starter.updateWithStart(update as typeof resumeUpdate, {
      args: [{ ...request, requestId }],
      attempts: 1,
      // Not cut at the placement deadline: an action waits its turn behind another one and behind
      // a procurement step in flight, and the operator's tool waits with it.
      withDeadline: false,
      // A completed run is not started again (ALLOW_DUPLICATE_FAILED_ONLY).
      onGiveUp: (err) =>
        err instanceof WorkflowExecutionAlreadyStartedError
          ? new ApiError('invalid_input', `The procurement of order ${orderId} has finished; reload the order`)
          : undefined,
    }),
  );
  const em = deps.em.fork();
  const after = await directCodeOrder(em, orderId);
  let refund: SupportOutcome['refund'] = null;
  if (action === 'refund') {
    const refunded = await ledgerAmountOf(em, `refund:${orderId}`);
    refund = {
      units: after.qty - after.fulfilledQuantity,
      amount: toDecimal(refunded ? fromDb(refunded) : 0),
      requested: after.qty,
      delivered: after.fulfilledQuantity,
      supplierPurchases: (await supplierPurchasesOf(em, orderId)).map(boughtFromSupplier),
    };
  }
  return { action, order: supportOrderView(after), refund };
}

/** Try the supplier again with fresh bounds. */
export function resumeOrder(deps: SupportDeps, orderId: string, req: SupportRequest): Promise<SupportOutcome> {
  return act(deps, orderId, 'resume', resumeUpdate, who(req));
}

/**
 * Deliver codes obtained by hand, exactly one per missing unit. The codes are staged in Postgres
 * and the workflow is sent the batch id only, so they never enter Temporal's history.
 */
export async function deliverOrder(
  deps: SupportDeps,
  orderId: string,
  req: SupportRequest & { codes: string[] },
): Promise<SupportOutcome> {
  const person = who(req);
  const codes = cleanManualCodes(req.codes ?? []);
  if (codes.length === 0) throw new ApiError('invalid_input', 'codes are required');
  await directCodeOrder(deps.em, orderId);
  const batchId = await stageManualCodes(deps.em.fork(), orderId, codes);
  try {
    return await act<DeliverRequest>(deps, orderId, 'deliver', deliverManuallyUpdate, { ...person, batchId });
  } finally {
    await dropManualCodes(deps.em.fork(), batchId);
  }
}

/** Refund the undelivered units to the balance; codes already obtained go to the reseller. */
export function refundOrder(deps: SupportDeps, orderId: string, req: SupportRequest): Promise<SupportOutcome> {
  return act(deps, orderId, 'refund', refundUpdate, who(req));
}
