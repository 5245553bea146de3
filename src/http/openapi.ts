import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../domain/errors';

extendZodWithOpenApi(z);

export { z };

// The published contract (spec revision 1.4.0) as an OpenAPI 3.1 document, built from the same
// zod schemas that parse the requests. Route registration lives in route.ts, webhooks in
// webhook-events.ts; this file holds what every operation shares.

export const ErrorBody = z
  .object({
    error: z
      .enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]])
      .describe('Stable machine code: branch on this, never on the message'),
    message: z.string().describe('Human readable, may be localized'),
    requestId: z.string().describe('Also returned in X-Request-Id; quote it to support'),
    retryable: z.boolean().describe('True when the same request may be retried as is (5xx and similar)'),
    details: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Additional data on some errors, e.g. `actualUnitPrice` on price_changed'),
  })
  .openapi('Error', { description: 'The error body of spec 2.11, on every non-2xx answer' });

/** Spec part 7, one line per code: the response description and the example's message. */
export const ERROR_MEANING: Record<ErrorCode, string> = {
  unauthorized: 'Missing or invalid key.',
  invalid_input: 'Invalid parameters.',
  invalid_cursor: 'Invalid or expired cursor on a list endpoint; restart from the first page.',
  not_found: "Unknown id, or not the caller's.",
  insufficient_balance: 'Balance order with too little balance; top up or lower qty.',
  out_of_stock: 'Product currently unavailable.',
  insufficient_stock: 'qty exceeds available stock after outstanding orders.',
  stock_unavailable: 'A fresh stock check could not confirm availability.',
  fulfillment_unavailable: 'Delivery route or live product or price validation unavailable.',
  price_changed: 'Current level price differs from expectedUnitPrice; the current price is in details.actualUnitPrice.',
  duplicate_order: 'A concurrent retry raced; look the order up by externalOrderId.',
  idempotency_conflict: 'Key reused with different parameters; use a new id.',
  api_test_quantity: 'Test product with qty other than 1.',
  api_test_balance_only: 'Test product with an unsupported channel or payment mode.',
  test_code_only: 'A test-product code submitted to the redemption site.',
  invalid_code: "Code unknown, voided or not the caller's.",
  missing_field: 'A required redeem field is empty.',
  invalid_account_id: 'Organization id is not a UUID.',
  invalid_session_json: 'Malformed session details.',
  invalid_telegram_username: 'Malformed messaging username.',
  already_redeemed: 'Redemption in progress or completed.',
  retry_conflict: 'Previous failed attempt still holds supplier resources; poll and retry later.',
  claim_conflict:
    'Admin API: another operator holds the claim (details name the holder and expiry), or the attempt was already decided.',
  insufficient_scope:
    'Extension (scoped keys): the key was made without the scope this operation needs; details.scope names it. Nothing was done.',
  ip_not_allowed:
    'Extension (scoped keys): the key may be used only from its CIDRs, and this request came from elsewhere. Nothing was done.',
  key_expired:
    'Extension (scoped keys): the key is past the expiry it was made with. Nothing was done; make a new key.',
  code_expired: 'Code expired (rare, since API codes do not expire).',
  webhook_not_configured: 'POST /webhook/test (or a retry) with no webhook set.',
  rate_limited: 'Request limit hit; honor Retry-After.',
  too_many_pending_topups: '5 unpaid top-ups already exist.',
  payment_provider_error: 'The payment provider failed; no order is left behind, retry.',
  payment_provider_timeout: 'The payment provider timed out; no order is left behind, retry.',
  session_validation_unavailable: 'Third-party session pre-check temporarily unavailable; retry.',
  service_unavailable:
    'The database or the workflow engine is briefly out of reach; retry the same request after Retry-After.',
  internal_error: 'Retryable. Report the requestId to support.',
};

const isRetryable = (code: ErrorCode) =>
  ERROR_STATUS[code] >= 500 || code === 'rate_limited' || code === 'duplicate_order';

/** An example error body per code, as the server writes it. */
export function errorExample(code: ErrorCode) {
  return {
    summary: code,
    value: {
      error: code,
      message: ERROR_MEANING[code],
      requestId: 'req_3f9a1c7e5b2d4f6a8c0e',
      retryable: isRetryable(code),
      ...(code === 'price_changed' ? { details: { actualUnitPrice: '17.64' } } : {}),
    },
  };
}

// Response headers (spec 2 and 8). Integers travel as strings; the schema says what they hold.
const header = (description: string, schema: Record<string, unknown>, required = false) => ({
  description,
  required,
  schema,
});
export const HEADERS = {
  'X-Request-Id': header('Identifies this request; also in the error body as requestId', { type: 'string' }, true),
  'X-RateLimit-Limit': header('Requests allowed per window for this key', { type: 'integer', minimum: 1 }),
  'X-RateLimit-Remaining': header('Requests left in the current window', { type: 'integer', minimum: 0 }),
  'X-RateLimit-Reset': header('Unix seconds when the window resets', { type: 'integer', minimum: 0 }),
  'Retry-After': header('Seconds to wait before retrying', { type: 'integer', minimum: 0 }),
  Warning: header('`299 - "..."` on a legacy top-up without an idempotency key (spec 4.2)', { type: 'string' }),
  'Content-Disposition': header(
    '`attachment; filename="…csv"`: the file name of a CSV export',
    { type: 'string' },
    true,
  ),
} as const;

export type HeaderName = keyof typeof HEADERS;

export const TAGS = [
  { name: 'Catalog', description: 'Products, per-level prices and availability (spec 4.1)' },
  { name: 'Balance', description: 'Prepaid balance and top-ups through a hosted checkout (spec 4.2)' },
  { name: 'Orders', description: 'Placing and reading orders, and the ledger (spec 4.3, 4.6)' },
  { name: 'Redemptions', description: 'Server-side redemption of platform codes (spec 4.4)' },
  { name: 'Webhooks', description: 'Signed event notifications and their deliveries (spec 4.5, 6)' },
  {
    name: 'Exports',
    description:
      'Orders and the ledger of a date range as CSV files: streamed, or written by an export job (beyond the spec)',
  },
  {
    name: 'Batches',
    description: 'Up to 5,000 order lines in one request, each placed by the rules of POST /orders (beyond the spec)',
  },
  { name: 'Support', description: 'Operator tools for orders that need attention (admin API)' },
];

const BEARER_DESCRIPTION = {
  api: 'Authorization: Bearer <API key>. The same key authenticates REST and MCP (spec 5).',
  admin: 'Authorization: Bearer <ADMIN_TOKEN>. The admin API is off unless ADMIN_TOKEN is set.',
};

export function createRegistry(surface: 'api' | 'admin' = 'api'): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registry.register('Error', ErrorBody);
  registry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: BEARER_DESCRIPTION[surface],
  });
  return registry;
}

const DESCRIPTION = [
  'Sells subscription redemption codes and gift cards to resellers. Amounts are Decimal strings',
  '(`^\\d+(\\.\\d{1,2})?$`), timestamps Unix seconds. Every response carries `X-Request-Id`; every',
  'non-2xx answer is the error body below, with a stable `error` code to branch on.',
  '',
  'Payments must come only from wallets with no direct or indirect fund flows to sanctioned',
  'platforms. Any freeze, hold or loss caused by such addresses is borne by the payer.',
].join('\n');

export function openApiDocument(
  registry: OpenAPIRegistry,
  serverUrl: string,
  opts: { title?: string; tags?: string[] } = {},
) {
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: opts.title ?? 'Wholesale code-purchase API',
      version: '1.4.0',
      description: DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    tags: TAGS.filter((t) => !opts.tags || opts.tags.includes(t.name)),
  });
}
