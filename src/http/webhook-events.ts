import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from './openapi';
import { Decimal, productAvailability } from './schemas';

// The six events of spec part 6 as the receiver gets them; the two that answer a reseller's own
// request (export.ready, batch.completed), sent like the spec's; and the two an endpoint gets only
// by naming them in its list (product.updated, balance.low): one JSON object, the envelope
// (eventId, event, timestamp) merged flat with the payload, signed over the raw body. Published in
// the OpenAPI document's `webhooks`, so receivers can be typed and validated.

const envelope = <E extends string>(event: E, eventId: z.ZodString) => ({
  eventId: eventId.describe('Stable across redeliveries of one event: dedupe on it'),
  event: z.literal(event),
  timestamp: z.number().int().describe('Unix seconds of the event'),
});

// Event id shapes (spec 6): attention and redemption events have fixed shapes, others `evt_`.
const EVT_ID = z
  .string()
  .regex(/^evt_[A-Za-z0-9_-]+$/)
  .openapi({ example: 'evt_6f1c2a9e0b4d4f8a' });
const ATTENTION_ID = z
  .string()
  .regex(/^order:[^:]+:order\.delivery_attention$/)
  .openapi({ example: 'order:ord_01H8X:order.delivery_attention' });
const redemptionId = (event: string) =>
  z
    .string()
    .regex(new RegExp(`^redemption:[^:]+:\\d+:${event.replace('.', '\\.')}$`))
    .openapi({ example: `redemption:red_01H8X:1:${event}` });

const DeliveryType = z.enum(['redemption', 'direct_code']);

export const OrderDeliveredEvent = z
  .object({
    ...envelope('order.delivered', EVT_ID),
    orderId: z.string(),
    externalOrderId: z.string().nullable(),
    productId: z.string(),
    qty: z.number().int(),
    codes: z.array(z.string()).describe('Every code of the order; for direct_code the gift card codes'),
    redeemUrl: z
      .string()
      .nullable()
      .describe('Give each code together with it (redemption products); null for direct_code'),
    deliveryType: DeliveryType,
  })
  .openapi('OrderDeliveredEvent');

export const OrderDeliveryAttentionEvent = z
  .object({
    ...envelope('order.delivery_attention', ATTENTION_ID),
    orderId: z.string(),
    externalOrderId: z.string().nullable(),
    productId: z.string(),
    qty: z.number().int(),
    deliveryType: z.literal('direct_code'),
    fulfillmentStatus: z.literal('needs_attention'),
    fulfilledQuantity: z.number().int().min(0),
    errorCode: z.literal('delivery_needs_attention'),
    resolution: z.literal('manual_review'),
    codes: z.array(z.string()).max(0).describe('Always empty: partial codes are withheld'),
    redeemUrl: z.null(),
  })
  .openapi('OrderDeliveryAttentionEvent');

export const TopupCreditedEvent = z
  .object({
    ...envelope('topup.credited', EVT_ID),
    orderId: z.string(),
    externalTopupId: z.string().nullable(),
    amount: Decimal,
    currency: z.enum(['USDT', 'USDC']),
  })
  .openapi('TopupCreditedEvent');

const redemptionFields = {
  orderId: z.string(),
  externalOrderId: z.string().nullable(),
  productId: z.string(),
  redemptionId: z.string(),
  code: z.string(),
};

export const RedemptionFulfilledEvent = z
  .object({
    ...envelope('redemption.fulfilled', redemptionId('redemption.fulfilled')),
    ...redemptionFields,
    status: z.literal('fulfilled'),
    failureCode: z.null(),
    retryable: z.literal(false),
    fulfilledAt: z.number().int(),
  })
  .openapi('RedemptionFulfilledEvent');

export const RedemptionFailedEvent = z
  .object({
    ...envelope('redemption.failed', redemptionId('redemption.failed')),
    ...redemptionFields,
    status: z.literal('failed'),
    failureCode: z.enum(['fulfillment_failed', 'rejected_by_operator']).nullable(),
    retryable: z.literal(true),
    fulfilledAt: z.null(),
  })
  .openapi('RedemptionFailedEvent');

export const WebhookTestEvent = z
  .object({ ...envelope('webhook.test', EVT_ID), message: z.string() })
  .openapi('WebhookTestEvent');

export const ExportReadyEvent = z
  .object({
    ...envelope('export.ready', EVT_ID),
    exportId: z.string(),
    externalExportId: z.string(),
    kind: z.enum(['orders', 'ledger']),
    from: z.string().describe('ISO 8601 UTC'),
    to: z.string().describe('ISO 8601 UTC'),
    rows: z.number().int().min(0),
    expiresAt: z.number().int().describe('Unix seconds when the download link stops working'),
  })
  .openapi('ExportReadyEvent', {
    description:
      'The file is ready: GET /exports/{exportId} gives its downloadUrl (the link itself is never sent in an event)',
  });

export const BatchCompletedEvent = z
  .object({
    ...envelope('batch.completed', EVT_ID),
    batchId: z.string(),
    externalBatchId: z.string(),
    total: z.number().int().min(1),
    placed: z.number().int().min(0),
    rejected: z.number().int().min(0),
  })
  .openapi('BatchCompletedEvent', {
    description: 'Every line has its outcome: GET /batches/{batchId}/lines lists them',
  });

const ProductChange = z.enum(['price', 'inStock', 'available', 'stock', 'availabilityStatus', 'deliveryMode']);

export const ProductUpdatedEvent = z
  .object({
    ...envelope('product.updated', EVT_ID),
    productId: z.string(),
    changed: z
      .array(ProductChange)
      .min(1)
      .describe('What changed for this account since the last announcement (or since before the change)'),
    price: Decimal.describe("The unit price at the account's level"),
    currency: z.enum(['USDT', 'USDC']),
    ...productAvailability,
  })
  .openapi('ProductUpdatedEvent');

export const BalanceLowEvent = z
  .object({
    ...envelope('balance.low', EVT_ID),
    balance: Decimal.describe('The balance after the change that took it below the threshold'),
    threshold: Decimal.describe("The endpoint's balanceLowThreshold"),
    currency: z.literal('USDT'),
    transactionType: z.enum(['topup', 'purchase', 'refund', 'adjust']).describe('The ledger row of that change'),
    orderId: z.string().nullable(),
  })
  .openapi('BalanceLowEvent');

const OPT_IN = 'Opt-in (extension beyond spec 1.4.0): sent only to an endpoint whose `events` list names it. ';
const ON_REQUEST =
  "Extension beyond spec 1.4.0, sent like the spec's events (to an endpoint without an `events` list, or whose list names it), " +
  'and only to an account that asked for it: ';

/** Every event body, by its `event` name. */
export const WEBHOOK_EVENTS = {
  'order.delivered': {
    schema: OrderDeliveredEvent,
    operationId: 'orderDelivered',
    summary: 'An order reached delivered: all codes are ready',
  },
  'order.delivery_attention': {
    schema: OrderDeliveryAttentionEvent,
    operationId: 'orderDeliveryAttention',
    summary: 'A direct-code order first entered needs_attention (sent once per order)',
  },
  'topup.credited': {
    schema: TopupCreditedEvent,
    operationId: 'topupCredited',
    summary: 'A top-up was confirmed and credited',
  },
  'redemption.fulfilled': {
    schema: RedemptionFulfilledEvent,
    operationId: 'redemptionFulfilled',
    summary: 'A redemption attempt reached fulfilled (once per attempt)',
  },
  'redemption.failed': {
    schema: RedemptionFailedEvent,
    operationId: 'redemptionFailed',
    summary: 'A redemption attempt reached failed (once per attempt)',
  },
  'webhook.test': { schema: WebhookTestEvent, operationId: 'webhookTest', summary: 'Sent by POST /webhook/test' },
  'export.ready': {
    schema: ExportReadyEvent,
    operationId: 'exportReady',
    summary: 'An export job wrote its file',
    extra: ON_REQUEST + 'one per export job (POST /exports), once its file is ready.',
  },
  'batch.completed': {
    schema: BatchCompletedEvent,
    operationId: 'batchCompleted',
    summary: 'Every line of a batch was placed or refused',
    extra: ON_REQUEST + 'one per batch (POST /batches), once every line has its outcome.',
  },
  'product.updated': {
    schema: ProductUpdatedEvent,
    operationId: 'productUpdated',
    summary: "A product's price at the account's level, its stock or its availability changed",
    extra:
      OPT_IN +
      'Changes to one product within a minute (PRODUCT_UPDATE_COALESCE_SECONDS) are announced as one event, and none when they cancel out. ' +
      'Triggered by price changes and stock imports; read GET /products/{id} for the state now.',
  },
  'balance.low': {
    schema: BalanceLowEvent,
    operationId: 'balanceLow',
    summary: "The balance fell below the endpoint's balanceLowThreshold",
    extra:
      OPT_IN +
      'Once per crossing: written with the ledger row that takes the balance from the threshold or above to below it; ' +
      'the next one comes only after the balance has been back at or above the threshold.',
  },
} as const satisfies Record<string, { schema: z.ZodType; operationId: string; summary: string; extra?: string }>;

export type WebhookEventName = keyof typeof WEBHOOK_EVENTS;

/** One body schema that accepts any event (a receiver's first check). */
export const WebhookEvent = z.discriminatedUnion('event', [
  OrderDeliveredEvent,
  OrderDeliveryAttentionEvent,
  TopupCreditedEvent,
  RedemptionFulfilledEvent,
  RedemptionFailedEvent,
  WebhookTestEvent,
  ExportReadyEvent,
  BatchCompletedEvent,
  ProductUpdatedEvent,
  BalanceLowEvent,
]);

export const SIGNATURE_HEADERS = {
  signature: 'X-Wholesale-Signature',
  eventId: 'X-Wholesale-Event-Id',
  deliveryId: 'X-Wholesale-Delivery-Id',
  timestamp: 'X-Wholesale-Timestamp',
} as const;

const DeliveryHeaders = z.object({
  [SIGNATURE_HEADERS.signature]: z
    .string()
    .regex(/^sha256=[0-9a-f]{64}$/)
    .describe(
      '`sha256=` + hex HMAC-SHA256 of the raw body, keyed with the signing secret from PUT /webhook. Verify it against the raw body before trusting a delivery.',
    ),
  [SIGNATURE_HEADERS.eventId]: z.string().describe('Stable across redeliveries of one event'),
  [SIGNATURE_HEADERS.deliveryId]: z.string().describe('Unique per attempt'),
  [SIGNATURE_HEADERS.timestamp]: z
    .string()
    .regex(/^\d+$/)
    .describe('Unix seconds of the event; usable to reject stale replays'),
});

const DELIVERY_RULES =
  'A POST to the URL set with PUT /webhook. Answer any 2xx within 5 seconds; anything else, a 3xx included (redirects are never ' +
  'followed), is a failure, retried with backoff from 30 s doubling to 6 h, for up to 10 attempts, with the same event id. Events ' +
  'can arrive out of order or later than a polling result: on receipt, query the original resource for the current state.';

export function registerWebhooks(registry: OpenAPIRegistry): void {
  for (const [name, e] of Object.entries(WEBHOOK_EVENTS)) {
    // Registered by name, so the webhook's $ref resolves under components/schemas.
    registry.register(`${e.operationId[0].toUpperCase()}${e.operationId.slice(1)}Event`, e.schema);
    registry.registerWebhook({
      method: 'post',
      path: name,
      operationId: e.operationId,
      tags: ['Webhooks'],
      summary: e.summary,
      description: 'extra' in e ? `${e.extra}\n\n${DELIVERY_RULES}` : DELIVERY_RULES,
      security: [],
      request: {
        headers: DeliveryHeaders,
        body: { required: true, content: { 'application/json': { schema: e.schema } } },
      },
      responses: {
        200: { description: 'Any 2xx within 5 seconds acknowledges the delivery' },
        default: { description: 'Anything else (timeouts and 3xx included) is retried' },
      },
    });
  }
}
