import { AccountSchema, ApiKeySchema, UserSchema } from './accounts';
import { ProductPriceSchema, ProductSchema, StockCodeSchema } from './catalog';
import { LedgerTransactionSchema } from './ledger';
import { IssuedCodeSchema, OrderSchema } from './orders';
import { RateLimitSchema } from './rate-limits';
import { RedemptionAttemptSchema, RedemptionSchema } from './redemptions';
import { SupportActionSchema } from './support';
import { EventSchema, WebhookDeliverySchema, WebhookEndpointSchema } from './webhooks';

// The entity schemas, one module per aggregate; importers take them from here.

export * from './accounts';
export * from './catalog';
export * from './ledger';
export * from './orders';
export * from './rate-limits';
export * from './redemptions';
export * from './support';
export * from './webhooks';

export const entities = [
  AccountSchema,
  ApiKeySchema,
  UserSchema,
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
