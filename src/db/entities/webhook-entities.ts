import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAt, money, timestamp } from './entity-columns';

// The events outbox, each account's webhook endpoint, and the deliveries of events to it.

export interface WebhookEndpoint {
  accountId: string;
  url: string;
  secret: string;
  /** The events it receives; null: every event but the opt-in ones (src/domain/event-types.ts). */
  events?: string[] | null;
  /** `balance.low` is sent when the balance falls below this. */
  balanceLowThreshold?: string | null;
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
    events: { type: 'string[]', columnType: 'text[]', nullable: true },
    balanceLowThreshold: { ...money, nullable: true },
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
    nextAttemptAt: { ...timestamp, nullable: true },
    createdAt,
    updatedAt: { ...createdAt },
  },
});
