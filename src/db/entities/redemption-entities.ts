import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAt, timestamp } from './entity-columns';

// Redemptions of platform codes, one row per code, and their attempts, one row per submission.

export interface Redemption {
  id: string;
  codeId: number;
  accountId: string;
  orderId: string;
  source: 'api' | 'site';
  attempt: number;
  status: 'pending' | 'processing' | 'fulfilled' | 'failed';
  failureCode?: string | null;
  deliverable?: string | null;
  createdAt: Date & Opt;
  updatedAt: Date & Opt;
  fulfilledAt?: Date | null;
}
export const RedemptionSchema = new EntitySchema<Redemption>({
  name: 'Redemption',
  tableName: 'redemptions',
  properties: {
    id: { type: 'string', primary: true },
    codeId: { type: 'bigint', unique: true },
    accountId: { type: 'uuid', index: true },
    orderId: { type: 'string' },
    source: { type: 'string', length: 8 },
    attempt: { type: 'integer' },
    status: { type: 'string', length: 16 },
    failureCode: { type: 'string', nullable: true },
    deliverable: { type: 'text', nullable: true },
    createdAt,
    updatedAt: { ...createdAt },
    fulfilledAt: { ...timestamp, nullable: true },
  },
});

/** One submission of a redemption; redeemInfo keeps normalized values only (no raw session JSON). */
export interface RedemptionAttempt {
  redemptionId: string;
  attempt: number;
  status: 'pending' | 'processing' | 'fulfilled' | 'failed';
  redeemInfo: Record<string, string>;
  upstreamRef?: string | null;
  holdsResources: boolean & Opt;
  failureCode?: string | null;
  createdAt: Date & Opt;
  finishedAt?: Date | null;
}
export const RedemptionAttemptSchema = new EntitySchema<RedemptionAttempt>({
  name: 'RedemptionAttempt',
  tableName: 'redemption_attempts',
  properties: {
    redemptionId: { type: 'string', primary: true },
    attempt: { type: 'integer', primary: true },
    status: { type: 'string', length: 16 },
    redeemInfo: { type: 'json' },
    upstreamRef: { type: 'string', nullable: true },
    holdsResources: { type: 'boolean', default: false },
    failureCode: { type: 'string', nullable: true },
    createdAt,
    finishedAt: { ...timestamp, nullable: true },
  },
});
