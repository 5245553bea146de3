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
  /** The asking API process's public key (src/temporal/sealed-answer.ts): a new top-up's checkout link comes back sealed to it. */
  sealTo?: string;
}

/**
 * What opening a top-up answers: the top-up's id, or the rejection. A new top-up also carries what
 * its create response shows (`shown`), its checkout link only sealed to the asking process, so
 * the API does not read it back; a replay carries none of it.
 */
export type TopupOpening =
  | {
      outcome: 'opened';
      orderId: string;
      reused: boolean;
      status: string;
      shown?: TopupView;
    }
  | Rejected;

/** A new top-up as its create response shows it. */
export interface TopupView {
  /** Decimal string. */
  amount: string;
  idempotencyWarning: boolean;
  /** `SealedSecrets` (no codes) sealed to the request's `sealTo` for its `placementId`; absent without a key. */
  sealed?: string;
}

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
