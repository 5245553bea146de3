// Shared, workflow-safe contract of hosted-checkout payments (intent orders and top-ups).
import { defineSignal, defineUpdate, defineQuery } from '@temporalio/workflow';

/** Durations from config, passed in at start because workflows cannot read the environment. */
export interface PaymentTiming {
  syncSeconds: number;
  lateWatchSeconds: number;
  latePollSeconds: number;
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

export interface PaymentWorkflowState {
  orderId: string | null;
  status: string;
  syncs: number;
  lastSyncError: string | null;
}

export const openTopupUpdate = defineUpdate<TopupCreateResponse, [OpenTopupRequest]>('openTopup');
export const topupStateQuery = defineQuery<PaymentWorkflowState>('state');
