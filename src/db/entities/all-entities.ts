import { AccountSchema, ApiKeySchema, UserSchema } from './account-entities';
import { ProductPriceSchema, ProductSchema, StockCodeSchema } from './catalog-entities';
import { LedgerTransactionSchema } from './ledger-entities';
import { IssuedCodeSchema, OrderSchema } from './order-entities';
import { RateLimitSchema } from './rate-limit-entities';
import { RedemptionAttemptSchema, RedemptionSchema } from './redemption-entities';
import { SupportActionSchema } from './support-entities';
import { EventSchema, WebhookDeliverySchema, WebhookEndpointSchema } from './webhook-entities';

// The entity schemas, one module per aggregate; importers take them from here.

export * from './account-entities';
export * from './catalog-entities';
export * from './ledger-entities';
export * from './order-entities';
export * from './rate-limit-entities';
export * from './redemption-entities';
export * from './support-entities';
export * from './webhook-entities';

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
