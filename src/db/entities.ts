import { EntitySchema, type Opt } from '@mikro-orm/core';
import type { RedeemFieldDef } from '../domain/redeem-info';
import { accountAreaEntities } from './account-entities';

// API keys and users live in account-entities.ts (the account area's tables).
export { ApiKeySchema, UserSchema, type ApiKey, type User } from './account-entities';

// Amounts are numeric(18,2) in Postgres and hydrate as strings; src/domain/money converts them.
const money = { type: 'decimal', precision: 18, scale: 2 } as const;
const createdAt = { type: 'Date', columnType: 'timestamptz', defaultRaw: 'now()' } as const;

export interface Account {
  id: string;
  name: string;
  level: number & Opt;
  cumulativeSpending: string & Opt;
  balance: string & Opt;
  createdAt: Date & Opt;
}
export const AccountSchema = new EntitySchema<Account>({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: { type: 'uuid', primary: true },
    name: { type: 'string' },
    level: { type: 'integer', default: 1 },
    cumulativeSpending: { ...money, default: 0 },
    balance: { ...money, default: 0 },
    createdAt,
  },
});

/** A product's redeem field (spec 2.3), as the shared redeemInfo validation defines it. */
export type RedeemField = RedeemFieldDef;

export interface Product {
  id: string;
  slug: string;
  name: string;
  nameEn?: string | null;
  currency: 'USDT' | 'USDC';
  fulfillmentMode: 'manual' | 'auto' | 'code_only';
  deliveryType: 'redemption' | 'direct_code';
  productGroupId?: string | null;
  denomination?: string | null;
  faceCurrency?: string | null;
  region?: string | null;
  inStock: boolean;
  stockMode: 'inventory' | 'on_demand' | 'limited';
  /** Hidden remaining count for `limited` products. */
  limitedRemaining?: number | null;
  availabilityStatus: 'available' | 'manual' | 'degraded' | 'unavailable';
  deliveryMode: 'automatic' | 'manual' | 'manual_fallback' | 'unavailable' | 'test_code_only';
  redeemFields: RedeemField[];
  redeemFieldsEn: RedeemField[];
  /** Listed in GET /products; the test product is readable by id only. */
  listed: boolean;
  active: boolean;
  isTest: boolean;
  sortOrder: number;
  createdAt: Date & Opt;
}
export const ProductSchema = new EntitySchema<Product>({
  name: 'Product',
  tableName: 'products',
  properties: {
    id: { type: 'string', primary: true },
    slug: { type: 'string' },
    name: { type: 'string' },
    nameEn: { type: 'string', nullable: true },
    currency: { type: 'string', length: 8 },
    fulfillmentMode: { type: 'string', length: 16 },
    deliveryType: { type: 'string', length: 16 },
    productGroupId: { type: 'string', nullable: true, index: true },
    denomination: { type: 'string', nullable: true },
    faceCurrency: { type: 'string', nullable: true },
    region: { type: 'string', nullable: true },
    inStock: { type: 'boolean' },
    stockMode: { type: 'string', length: 16 },
    limitedRemaining: { type: 'integer', nullable: true },
    availabilityStatus: { type: 'string', length: 16 },
    deliveryMode: { type: 'string', length: 24 },
    redeemFields: { type: 'json' },
    redeemFieldsEn: { type: 'json' },
    listed: { type: 'boolean' },
    active: { type: 'boolean' },
    isTest: { type: 'boolean' },
    sortOrder: { type: 'integer' },
    createdAt,
  },
});

export interface ProductPrice {
  productId: string;
  level: number;
  price: string;
}
export const ProductPriceSchema = new EntitySchema<ProductPrice>({
  name: 'ProductPrice',
  tableName: 'product_prices',
  properties: {
    productId: { type: 'string', primary: true },
    level: { type: 'integer', primary: true },
    price: { ...money },
  },
});

/** Imported codes of `inventory` products; each is sold once. */
export interface StockCode {
  id: number;
  productId: string;
  code: string;
  orderId?: string | null;
  importedAt: Date & Opt;
  soldAt?: Date | null;
}
export const StockCodeSchema = new EntitySchema<StockCode>({
  name: 'StockCode',
  tableName: 'stock_codes',
  uniques: [{ properties: ['productId', 'code'] }],
  indexes: [{ properties: ['productId', 'orderId'] }],
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    productId: { type: 'string' },
    code: { type: 'string' },
    orderId: { type: 'string', nullable: true },
    importedAt: { ...createdAt },
    soldAt: { type: 'Date', columnType: 'timestamptz', nullable: true },
  },
});

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
    paidAt: { type: 'Date', columnType: 'timestamptz', nullable: true },
    deliveredAt: { type: 'Date', columnType: 'timestamptz', nullable: true },
    expiresAt: { type: 'Date', columnType: 'timestamptz', nullable: true },
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
    fulfilledAt: { type: 'Date', columnType: 'timestamptz', nullable: true },
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
    finishedAt: { type: 'Date', columnType: 'timestamptz', nullable: true },
  },
});

/** The ledger: every balance change, with the balance it left. Its sum equals the balance. */
export interface LedgerTransaction {
  id: number;
  accountId: string;
  type: 'topup' | 'purchase' | 'refund' | 'adjust';
  amount: string;
  balanceAfter: string;
  orderId?: string | null;
  /** Makes each money movement happen once: purchase:<orderId>, topup:<orderId>, ... */
  idempotencyKey: string;
  note?: string | null;
  createdAt: Date & Opt;
}
export const LedgerTransactionSchema = new EntitySchema<LedgerTransaction>({
  name: 'LedgerTransaction',
  tableName: 'ledger_transactions',
  indexes: [{ properties: ['accountId', 'id'] }],
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    accountId: { type: 'uuid' },
    type: { type: 'string', length: 16 },
    amount: { ...money },
    balanceAfter: { ...money },
    orderId: { type: 'string', nullable: true },
    idempotencyKey: { type: 'string', unique: true },
    note: { type: 'text', nullable: true },
    createdAt,
  },
});

export interface WebhookEndpoint {
  accountId: string;
  url: string;
  secret: string;
  version: number;
  updatedAt: Date & Opt;
}
export const WebhookEndpointSchema = new EntitySchema<WebhookEndpoint>({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    accountId: { type: 'uuid', primary: true },
    url: { type: 'text' },
    secret: { type: 'string' },
    version: { type: 'integer' },
    updatedAt: { ...createdAt },
  },
});

/** The outbox: events are written with the state change that causes them. */
export interface DomainEvent {
  id: string;
  accountId: string;
  type: string;
  payload: Record<string, unknown>;
  createdAt: Date & Opt;
}
export const EventSchema = new EntitySchema<DomainEvent>({
  name: 'DomainEvent',
  tableName: 'events',
  indexes: [{ properties: ['accountId', 'createdAt'] }],
  properties: {
    id: { type: 'string', primary: true },
    accountId: { type: 'uuid' },
    type: { type: 'string', length: 48 },
    payload: { type: 'json' },
    createdAt,
  },
});

export interface WebhookDelivery {
  id: string;
  eventId: string;
  accountId: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number & Opt;
  lastStatusCode?: number | null;
  lastError?: string | null;
  nextAttemptAt?: Date | null;
  createdAt: Date & Opt;
  updatedAt: Date & Opt;
}
export const WebhookDeliverySchema = new EntitySchema<WebhookDelivery>({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  indexes: [{ properties: ['accountId', 'createdAt', 'id'] }],
  properties: {
    id: { type: 'string', primary: true },
    eventId: { type: 'string', unique: true },
    accountId: { type: 'uuid' },
    status: { type: 'string', length: 16 },
    attempts: { type: 'integer', default: 0 },
    lastStatusCode: { type: 'integer', nullable: true },
    lastError: { type: 'text', nullable: true },
    nextAttemptAt: { type: 'Date', columnType: 'timestamptz', nullable: true },
    createdAt,
    updatedAt: { ...createdAt },
  },
});

/** Fixed-window counters shared by every API process (rate limits live in Postgres). */
export interface RateLimitWindow {
  bucket: string;
  windowStart: Date;
  count: number;
}
export const RateLimitSchema = new EntitySchema<RateLimitWindow>({
  name: 'RateLimitWindow',
  tableName: 'rate_limits',
  properties: {
    bucket: { type: 'string', primary: true },
    windowStart: { type: 'Date', columnType: 'timestamptz', primary: true },
    count: { type: 'integer' },
  },
});

/** Who did what to an order or redemption, and why (support actions). */
export interface SupportAction {
  id: number;
  subjectId: string;
  action: string;
  actor: string;
  reason: string;
  payload: Record<string, unknown>;
  createdAt: Date & Opt;
}
export const SupportActionSchema = new EntitySchema<SupportAction>({
  name: 'SupportAction',
  tableName: 'support_actions',
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    subjectId: { type: 'string', index: true },
    action: { type: 'string', length: 32 },
    actor: { type: 'string' },
    reason: { type: 'text' },
    payload: { type: 'json' },
    createdAt,
  },
});

export const entities = [
  AccountSchema,
  ...accountAreaEntities,
  ProductSchema,
  ProductPriceSchema,
  StockCodeSchema,
  OrderSchema,
  IssuedCodeSchema,
  RedemptionSchema,
  RedemptionAttemptSchema,
  LedgerTransactionSchema,
  WebhookEndpointSchema,
  EventSchema,
  WebhookDeliverySchema,
  RateLimitSchema,
  SupportActionSchema,
];
