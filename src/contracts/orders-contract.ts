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
  /** The asking API process's public key (src/temporal/sealed-answer.ts): a new order's codes and checkout link come back sealed to it. */
  sealTo?: string;
}

/** An expected business outcome of a placement that is not an order: the spec's code and our words. */
export interface Rejection {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/**
 * What a placement answers (the update's result, and its local activity's). A new placement
 * carries what the create response shows (`shown`), so the API does not read the order back: its
 * codes and checkout link only sealed to the asking process (`sealed`), never in the clear, even
 * to the codec server. A replay (`reused`) carries none of it, since the order may have moved on
 * since it was placed: the API reads it.
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

/** The placed order as its create response shows it; its codes and checkout link sealed. */
export interface PlacedView {
  /** Decimal string. */
  amount: string;
  deliveryType: 'redemption' | 'direct_code';
  fulfilledQuantity: number;
  /** `SealedSecrets` sealed to the request's `sealTo` for its `placementId`; absent without a key. */
  sealed?: string;
}

/** What `PlacedView.sealed` holds: the codes the response shows and the checkout link. */
export interface SealedSecrets {
  codes: string[];
  checkoutUrl: string | null;
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
