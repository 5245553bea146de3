// The top-up lifecycle's shared contract: ids, the update/query definitions and types.
// Workflow-safe (no Node modules), imported by the workflow, its activities and the services that
// start it. The payment loop it shares with intent orders is in ./payments.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { Rejected } from './orders-contract';
import type { PaymentTiming, PaymentWorkflowState } from './payments-contract';

/** Keyed by the reseller's externalTopupId, or by the order id when the request sent none. */
export const topupWorkflowId = (accountId: string, key: string) => `topup:${accountId}:${key}`;

export interface TopupWorkflowInput {
  accountId: string;
  key: string;
  timing: PaymentTiming;
}

export interface OpenTopupRequest {
  orderId: string;
  externalTopupId: string | null;
  amount: string;
  currency: 'USDT' | 'USDC';
  source: 'rest' | 'mcp';
  /** One per API request (also its update id): the request that opens a top-up is told `reused: false`. */
  placementId: string;
}

/** What opening a top-up answers: the top-up's id, or the rejection (ids only, never the checkout link). */
export type TopupOpening = { outcome: 'opened'; orderId: string; reused: boolean; status: string } | Rejected;

export interface TopupCreateResponse {
  orderId: string;
  externalTopupId: string | null;
  amount: string;
  status: 'pending' | 'delivered' | 'expired' | 'refunded';
  checkoutUrl: string | null;
  paymentUrl: string | null;
  reused: boolean;
  idempotencyWarning?: string;
}

export const openTopupUpdate = defineUpdate<TopupOpening, [OpenTopupRequest]>('openTopup');
export const topupStateQuery = defineQuery<PaymentWorkflowState>('state');
