// The order lifecycle's shared contract: ids, update/query definitions and types. Workflow-safe
// (no Node modules), imported by workflows, activities and HTTP handlers alike.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { OrderCreateResponse, PaymentMode } from '../services/orders';
import type { PaymentTiming, PaymentWorkflowState } from './payments';

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

export const placeOrderUpdate = defineUpdate<OrderCreateResponse, [PlaceOrderRequest]>('placeOrder');
export const orderStateQuery = defineQuery<OrderWorkflowState>('state');
