// The order lifecycle's shared contract: ids, update/query definitions and types. Workflow-safe
// (no Node modules), imported by workflows, activities and HTTP handlers alike.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { ErrorCode } from '../domain/errors';
import type { PaymentTiming, PaymentWorkflowState } from './payments-contract';

/** How an order is paid: from the prepaid balance, or through a hosted checkout (spec part 3). */
export type PaymentMode = 'balance' | 'intent';

export const orderWorkflowId = (accountId: string, externalOrderId: string) => `order:${accountId}:${externalOrderId}`;

export interface OrderWorkflowInput {
  accountId: string;
  externalOrderId: string;
  /** Payment durations from config, for intent orders. */
  timing?: PaymentTiming;
}

export interface PlaceOrderRequest {
  productId: string;
  qty: number;
  payment: PaymentMode;
  expectedUnitPrice?: string;
  source: 'rest' | 'mcp';
  /** One per API request (also its update id): the request that places an order is told `reused: false`. */
  placementId: string;
}

/** An expected business outcome of a placement that is not an order: the spec's code and our words. */
export interface Rejection {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/**
 * What a placement answers (the update's result, and its local activity's). Ids, statuses and
 * amounts only: codes and checkout links stay in Postgres, where the API reads them by the order's
 * id when its response shows them. A new placement also carries the rest of what the response
 * shows (`shown`), so the API does not read the order back; a replay (`reused`) does not, since the
 * order may have moved on since it was placed.
 */
export type Placement =
  | {
      outcome: 'placed';
      orderId: string;
      reused: boolean;
      status: string;
      fulfillmentStatus: string | null;
      shown?: PlacedView;
    }
  | Rejected;

/** The placed order as its create response shows it, bar the codes and the checkout link. */
export interface PlacedView {
  /** Decimal string. */
  amount: string;
  deliveryType: 'redemption' | 'direct_code';
  fulfilledQuantity: number;
}

/** A placement or top-up that an expected business rule refused. */
export interface Rejected {
  outcome: 'rejected';
  rejection: Rejection;
}

export interface OrderWorkflowState {
  orderId: string | null;
  status: string;
  fulfillmentStatus: string | null;
  placementAttempts: number;
  lastError: string | null;
  /** Intent orders: the payment loop's view (syncs made, last provider error). */
  payment?: PaymentWorkflowState;
}

export const placeOrderUpdate = defineUpdate<Placement, [PlaceOrderRequest]>('placeOrder');
export const orderStateQuery = defineQuery<OrderWorkflowState>('state');
