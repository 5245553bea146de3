import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAt, money, timestamp } from './entity-columns';

// Orders (purchases and top-ups) and the codes issued to them.

/** Purchase and top-up orders share one table because GET /orders lists both. */
export interface Order {
  id: string;
  accountId: string;
  orderNumber: number & Opt;
  kind: 'purchase' | 'topup';
  channel: 'wholesale_api' | 'topup';
  source: string;
  externalOrderId?: string | null;
  externalTopupId?: string | null;
  productId?: string | null;
  qty: number;
  unitPrice: string;
  amount: string;
  currency: string;
  payment: 'balance' | 'intent';
  status: 'pending' | 'paid' | 'delivered' | 'expired' | 'refunded';
  deliveryType?: 'redemption' | 'direct_code' | null;
  fulfillmentStatus?: string | null;
  fulfilledQuantity: number & Opt;
  errorCode?: string | null;
  resolution?: string | null;
  checkoutId?: string | null;
  checkoutUrl?: string | null;
  idempotencyWarning: boolean & Opt;
  /** The API request that placed this order (see Migration20261201000000PlacementId). */
  placementId?: string | null;
  createdAt: Date & Opt;
  updatedAt: Date & Opt;
  paidAt?: Date | null;
  deliveredAt?: Date | null;
  expiresAt?: Date | null;
}
export const OrderSchema = new EntitySchema<Order>({
  name: 'Order',
  tableName: 'orders',
  indexes: [{ properties: ['accountId', 'createdAt', 'id'] }],
  properties: {
    id: { type: 'string', primary: true },
    accountId: { type: 'uuid' },
    orderNumber: { type: 'bigint', autoincrement: true, unique: true },
    kind: { type: 'string', length: 16 },
    channel: { type: 'string', length: 16 },
    source: { type: 'string', length: 16 },
    externalOrderId: { type: 'string', length: 64, nullable: true },
    externalTopupId: { type: 'string', length: 64, nullable: true },
    productId: { type: 'string', nullable: true },
    qty: { type: 'integer' },
    unitPrice: { ...money },
    amount: { ...money },
    currency: { type: 'string', length: 8 },
    payment: { type: 'string', length: 16 },
    status: { type: 'string', length: 16 },
    deliveryType: { type: 'string', length: 16, nullable: true },
    fulfillmentStatus: { type: 'string', length: 24, nullable: true },
    fulfilledQuantity: { type: 'integer', default: 0 },
    errorCode: { type: 'string', nullable: true },
    resolution: { type: 'string', nullable: true },
    checkoutId: { type: 'string', nullable: true, unique: true },
    checkoutUrl: { type: 'text', nullable: true },
    idempotencyWarning: { type: 'boolean', default: false },
    placementId: { type: 'string', length: 64, nullable: true },
    createdAt,
    updatedAt: { ...createdAt },
    paidAt: { ...timestamp, nullable: true },
    deliveredAt: { ...timestamp, nullable: true },
    expiresAt: { ...timestamp, nullable: true },
  },
});

/** A code issued to an order: a platform redemption code or a procured gift card code. */
export interface IssuedCode {
  id: number;
  orderId: string;
  accountId: string;
  productId: string;
  code: string;
  kind: 'platform' | 'gift_card';
  isTest: boolean;
  voided: boolean & Opt;
  createdAt: Date & Opt;
}
export const IssuedCodeSchema = new EntitySchema<IssuedCode>({
  name: 'IssuedCode',
  tableName: 'issued_codes',
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    orderId: { type: 'string', index: true },
    accountId: { type: 'uuid', index: true },
    productId: { type: 'string' },
    code: { type: 'string', unique: true },
    kind: { type: 'string', length: 16 },
    isTest: { type: 'boolean' },
    voided: { type: 'boolean', default: false },
    createdAt,
  },
});
