// Shared, workflow-safe contract of hosted-checkout payments (intent orders and top-ups).
import { defineSignal, defineUpdate, defineQuery } from '@temporalio/workflow';
import type { Rejected } from './orders';

/** Durations from config, passed in at start because workflows cannot read the environment. */
export interface PaymentTiming {
  syncSeconds: number;
  lateWatchSeconds: number;
  latePollSeconds: number;
  /** Absent in workflows started before it existed. */
  placementRecoverySeconds?: number;
}

/** A verified provider callback: the payment (or abandonment) of the order's checkout. */
export interface PaymentNotice {
  orderId: string;
  status: 'paid' | 'abandoned';
}

export const paymentNotifiedSignal = defineSignal<[PaymentNotice]>('paymentNotified');

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

export interface PaymentWorkflowState {
  orderId: string | null;
  status: string;
  syncs: number;
  lastSyncError: string | null;
}

export const openTopupUpdate = defineUpdate<TopupOpening, [OpenTopupRequest]>('openTopup');
export const topupStateQuery = defineQuery<PaymentWorkflowState>('state');
