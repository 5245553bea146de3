import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  McpError,
  type CallToolResult,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { z, type ZodObject } from 'zod';
import { ApiError, errorBody } from '../domain/errors';
import type { AppContext } from '../http/context';
import { toApiError } from '../http/middleware';
import { CreateOrderBody } from '../http/routers/orders-router';
import { TopupBody, TopupResult } from '../http/routers/topups-router';
import { assertCleanInput, IdString } from '../http/hygiene';
import {
  Availability,
  Balance,
  Cursor as CursorParam,
  OrderCreate,
  OrderDetail,
  OrderSummary,
  Product,
  Transaction,
} from '../http/schemas';
import type { KeyScope } from '../domain/key-scopes';
import type { Principal } from '../services/accounts/accounts';
import { assertScope } from '../services/accounts/key-access';
import { PlacementRefused } from '../services/admission';
import { checkAvailability, listProducts } from '../services/supply/catalog';
import { getBalance } from '../services/payments/ledger';
import { listOrders, listTransactions, orderDetail } from '../services/orders/order-queries';
import { submitOrder } from '../services/orders/order-submission';
import { submitTopup } from '../services/payments/topup-submission';

/** One MCP POST: the authenticated caller and the request id every error carries. */
export interface McpCall {
  ctx: AppContext;
  principal: Principal;
  requestId: string;
}

interface Tool<I extends ZodObject = ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  /** The REST endpoint's response schema: structuredContent has exactly that shape. */
  output: ZodObject;
  annotations: ToolAnnotations;
  /** The key scope it needs, as its REST endpoint does. */
  scope: KeyScope;
  run: (args: z.infer<I>, call: McpCall) => Promise<object>;
}

const tool = <I extends ZodObject>(def: Tool<I>): Tool => def as unknown as Tool;

const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
// Ordering and topping up create records and move money, but a repeated call with the same
// idempotency id returns the first result instead of acting twice.
const WRITE: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
};

const Limit = z.number().int().min(1).max(100).default(50).describe('Page size, 1 to 100 (default 50).');
const Cursor = CursorParam.describe(
  '`nextCursor` from the previous page, passed back unchanged. Omit for the first page.',
);

const ProductId = IdString(128).describe('A leaf product `id` from list_products (never a slug or productGroupId).');

const RETRY_RULES =
  'On a timeout, a network error or an error with `retryable=true`, call again with the same id and the same parameters: ' +
  'you get the original result with `reused=true` and nothing is done twice. ' +
  '`idempotency_conflict` means the id was already used with different parameters: stop retrying and use a new id.';

const TOOLS: Tool[] = [
  tool({
    name: 'list_products',
    title: 'List products',
    description:
      "List every purchasable product with `price`, the unit price at the caller's current level (levels Lv1 to Lv5 set the price; " +
      '`retailPrice` is the Lv1 list price, for reference only). Order by the product `id`, never by `slug`. Gift-card denominations that ' +
      'share a `productGroupId` are separate leaf products: order the leaf `id`; a productGroupId is never a valid productId. ' +
      '`deliveryType=redemption` products yield platform codes that must be delivered to the end customer together with `redeemUrl`; ' +
      '`direct_code` products yield the gift card codes themselves. `available` tells whether a qty=1 order would be accepted now; ' +
      'use check_availability for larger quantities. Same data as GET /wholesale/v1/products.',
    input: z.object({}).strict(),
    output: z.object({ products: z.array(Product) }),
    annotations: READ,
    scope: 'read',
    run: async (_args, { ctx, principal }) => ({
      products: await listProducts(ctx.orm.em.fork(), principal.account.level, ctx.config.STOCK_DISPLAY_CAP),
    }),
  }),
  tool({
    name: 'check_availability',
    title: 'Check availability and unit price',
    description:
      'Check in real time whether `qty` units of one product can be ordered now, and at which unit price for this account (`unitPrice`). ' +
      'It reserves nothing. Use it before large orders, and pass the returned `unitPrice` to purchase_codes as `expectedUnitPrice` so the ' +
      'order fails with `price_changed` instead of settling at a different price. Unknown or inactive products return `not_found`. ' +
      'Same as GET /wholesale/v1/products/{id}/availability.',
    input: z
      .object({
        productId: ProductId,
        qty: z.number().int().min(1).max(1000).default(1).describe('Units wanted, 1 to 1000 (default 1).'),
      })
      .strict(),
    output: Availability,
    annotations: READ,
    scope: 'read',
    run: async ({ productId, qty }, { ctx, principal }) =>
      checkAvailability(ctx.orm.em.fork(), productId, qty, principal.account.level),
  }),
  tool({
    name: 'get_balance',
    title: 'Get balance',
    description:
      'Read the prepaid balance (a Decimal string in USDT; USDC top-ups are credited 1:1). purchase_codes with `payment=balance` debits it; ' +
      'if it is too low the order fails with `insufficient_balance`: top up with create_topup or lower the quantity. Same as GET /wholesale/v1/balance.',
    input: z.object({}).strict(),
    output: Balance,
    annotations: READ,
    scope: 'read',
    run: async (_args, { ctx, principal }) => getBalance(ctx.orm.em.fork(), principal.account.id),
  }),
  tool({
    name: 'create_topup',
    title: 'Top up the balance',
    description:
      'Top up the prepaid balance through a hosted crypto checkout (USDT or USDC). Returns a pending top-up with `checkoutUrl` ' +
      '(alias `paymentUrl`): give it only to the person who will pay, never log or publish it. The balance is credited once the payment is ' +
      'confirmed; an unpaid top-up expires after about 15 minutes (a late payment is still credited). Follow it with get_order every 10 to 30 s. ' +
      '`externalTopupId` is required and is your idempotency id. ' +
      RETRY_RULES +
      ' ' +
      'Limits: 20 top-up requests per hour per account (replays count, shared with REST: `rate_limited` with `details.retryAfter` seconds) ' +
      'and at most 5 unpaid top-ups at a time (`too_many_pending_topups`).',
    input: TopupBody.extend({
      externalTopupId: IdString(64).describe(
        'Your unique id for this top-up (max 64 characters), reused unchanged on retries.',
      ),
      amount: TopupBody.shape.amount.describe(
        'Amount to credit, a Decimal string greater than 0 with at most 2 decimals, e.g. "50.00".',
      ),
      currency: TopupBody.shape.currency.describe(
        'Payment currency, USDT (default) or USDC; both credit the USDT balance 1:1.',
      ),
    }),
    output: TopupResult,
    annotations: WRITE,
    scope: 'topups',
    run: async (args, { ctx, principal }) =>
      submitTopup(
        {
          em: ctx.orm.em.fork(),
          temporal: ctx.temporal,
          limits: { perHour: ctx.config.TOPUP_RATE_LIMIT_PER_HOUR, maxPending: ctx.config.MAX_PENDING_TOPUPS },
          config: ctx.config,
          admission: ctx.admission,
          answerKey: ctx.answerKey,
        },
        {
          accountId: principal.account.id,
          externalTopupId: args.externalTopupId,
          amount: args.amount,
          currency: args.currency,
          source: 'mcp',
        },
      ),
  }),
  tool({
    name: 'purchase_codes',
    title: 'Purchase codes',
    description:
      "Place an order for `qty` units of one product at this account's level price (the same price as REST). " +
      '`payment=balance` (default) debits the balance at once: ordinary products come back `status=delivered` with `codes`; ' +
      '`direct_code` gift cards come back `status=paid` with `codes=[]` while procurement continues. ' +
      '`payment=intent` debits nothing and returns `status=pending` with `checkoutUrl` (alias `paymentUrl`) for a human payer: give it only ' +
      'to the payer, never log or publish it; unpaid it expires after about 15 minutes. Until `status=delivered`, poll get_order every 10 to 30 s ' +
      '(for direct_code also read `fulfillmentStatus`; on `needs_attention` slow down, contact support with this order and never place a ' +
      'replacement order). Delivery: for `deliveryType=redemption` give each code to the end customer together with `redeemUrl`, never a code ' +
      'alone; for `direct_code` deliver the codes as they are. Pass the latest quoted price as `expectedUnitPrice` to get `price_changed` ' +
      '(current price in `details.actualUnitPrice`) instead of paying another price. `externalOrderId` is required and is your idempotency id. ' +
      RETRY_RULES +
      ' (For orders the parameters compared are productId and qty.) ' +
      'After an unclear result you can also find the order with list_orders filtered by externalOrderId. `insufficient_balance`, ' +
      '`out_of_stock`, `insufficient_stock`, `stock_unavailable` and `fulfillment_unavailable` mean nothing was charged. ' +
      'The integration test product prod_api_order_test is REST only and is refused here with `api_test_balance_only`.',
    input: CreateOrderBody.extend({
      externalOrderId: CreateOrderBody.shape.externalOrderId.describe(
        'Your unique id for this order (max 64 characters), reused unchanged on retries.',
      ),
      productId: ProductId,
      qty: CreateOrderBody.shape.qty.describe('Units to buy, 1 to 1000.'),
      payment: CreateOrderBody.shape.payment.describe(
        '`balance` (default) debits the prepaid balance; `intent` returns a hosted checkout link for a human payer.',
      ),
      expectedUnitPrice: CreateOrderBody.shape.expectedUnitPrice.describe(
        'Optional price lock: the unit price you were quoted, e.g. "18.00".',
      ),
    }),
    output: OrderCreate,
    annotations: WRITE,
    scope: 'orders',
    run: async (args, { ctx, principal }) =>
      submitOrder(
        {
          em: ctx.orm.em.fork(),
          temporal: ctx.temporal,
          baseUrl: ctx.config.publicBaseUrl,
          config: ctx.config,
          admission: ctx.admission,
          answerKey: ctx.answerKey,
        },
        { ...args, accountId: principal.account.id, source: 'mcp' },
      ),
  }),
  tool({
    name: 'get_order',
    title: 'Get order',
    description:
      'Read one purchase or top-up order by `orderId`: status, unit price, amount, `codes` (only once every item is delivered), `redeemUrl`, ' +
      '`paymentUrl` (only while an intent order or top-up is pending: give it only to the payer) and, for direct-code orders, ' +
      '`fulfillmentStatus` and `fulfilledQuantity`. This is the source of truth: poll it every 10 to 30 s while an order is pending or ' +
      'processing. An unknown id, or one of another account, returns `not_found`. Same as GET /wholesale/v1/orders/{id}.',
    input: z
      .object({
        orderId: IdString(128).describe('`orderId` from purchase_codes or create_topup, or `id` from list_orders.'),
      })
      .strict(),
    output: OrderDetail,
    annotations: READ,
    scope: 'read',
    run: async ({ orderId }, { ctx, principal }) =>
      orderDetail(ctx.orm.em.fork(), principal.account.id, orderId, ctx.config.publicBaseUrl),
  }),
  tool({
    name: 'list_orders',
    title: 'List orders',
    description:
      'List purchase and top-up orders, newest first, as summaries (never codes or payment links: use get_order for those). ' +
      "Filter by `externalOrderId` (it also matches a top-up's externalTopupId) to recover an order after a timeout or an unclear result. " +
      'While `hasMore` is true, pass `nextCursor` back as `cursor` for the next page; `invalid_cursor` means restart from the first page. ' +
      'Same as GET /wholesale/v1/orders.',
    input: z
      .object({
        externalOrderId: IdString(64).optional().describe('Only the order (or top-up) with this idempotency id.'),
        limit: Limit,
        cursor: Cursor,
      })
      .strict(),
    output: z.object({ orders: z.array(OrderSummary), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
    annotations: READ,
    scope: 'read',
    run: async (args, { ctx, principal }) => {
      const page = await listOrders(ctx.orm.em.fork(), {
        ...args,
        accountId: principal.account.id,
        baseUrl: ctx.config.publicBaseUrl,
        cursorSecret: ctx.config.CURSOR_SECRET,
      });
      return { orders: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore };
    },
  }),
  tool({
    name: 'list_transactions',
    title: 'List balance transactions',
    description:
      'List the ledger rows of the balance, newest first: `type` (topup, purchase, refund, adjust), signed `amount` (negative for a purchase), ' +
      'the `balanceAfter` snapshot and `order_id`. Filter by `type`; paginate with `cursor`, `nextCursor` and `hasMore` as in list_orders. ' +
      'Same as GET /wholesale/v1/transactions.',
    input: z
      .object({
        type: z.enum(['topup', 'purchase', 'refund', 'adjust']).optional().describe('Only rows of this type.'),
        limit: Limit,
        cursor: Cursor,
      })
      .strict(),
    output: z.object({ transactions: z.array(Transaction), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
    annotations: READ,
    scope: 'read',
    run: async (args, { ctx, principal }) => {
      const page = await listTransactions(ctx.orm.em.fork(), {
        ...args,
        accountId: principal.account.id,
        cursorSecret: ctx.config.CURSOR_SECRET,
      });
      return { transactions: page.items, nextCursor: page.nextCursor, hasMore: page.hasMore };
    },
  }),
];

const INSTRUCTIONS = [
  'Wholesale service for subscription redemption codes and gift cards. These tools mirror the REST API /wholesale/v1 with the same',
  'API key, account, balance, per-level prices and orders. Procedure for an order:',
  '1. list_products and order by product `id`, never by slug.',
  '2. check_availability before large orders.',
  '3. purchase_codes with a unique `externalOrderId`; on a timeout or retryable error retry with the same id, productId and qty.',
  '4. Pass the latest quoted price as `expectedUnitPrice` to fail on a price change.',
  '5. get_order every 10 to 30 s until `status=delivered` (for direct_code also read `fulfillmentStatus`).',
  '6. For `redemption` products deliver each code together with `redeemUrl`; for `direct_code` deliver the codes as they are.',
  'A checkout link (`checkoutUrl`, `paymentUrl`) goes only to the payer and is never logged or published.',
  'Errors are tool results with isError=true whose text is the JSON error body {error, message, requestId, retryable, details?}:',
  'branch on `error`, never on the message; `retryable=true` means the same call may be repeated as is; quote `requestId` to support.',
  'A key made with fewer scopes gets `insufficient_scope` from the tools outside them: the reading tools need `read`,',
  'purchase_codes needs `orders` and create_topup `topups`.',
  'Server-side redemption of codes is available through REST only.',
].join('\n');

/**
 * The spec 2.11 error body as a tool error; Retry-After becomes `details.retryAfter` (seconds), as
 * MCP has no headers. It travels as text only: the SDK client checks any structuredContent against
 * the tool's output schema, even on an error.
 */
function errorResult(err: ApiError, requestId: string): CallToolResult {
  const retryAfter = err.headers?.['Retry-After'];
  const body = errorBody(err, requestId, retryAfter ? { retryAfter: Number(retryAfter) } : undefined);
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

async function invoke(t: Tool, rawArgs: unknown, call: McpCall): Promise<CallToolResult> {
  const { ctx, principal, requestId } = call;
  try {
    // Before the arguments are read, as in REST.
    assertScope(principal, t.scope);
    assertCleanInput({ arguments: rawArgs });
    const args = t.input.parse(rawArgs ?? {});
    const result = await t.run(args, call);
    ctx.logger.info({ requestId, accountId: principal.account.id, tool: t.name }, 'mcp tool');
    return {
      structuredContent: result as Record<string, unknown>,
      content: [{ type: 'text', text: JSON.stringify(result) }],
    };
  } catch (err) {
    const apiError = toApiError(err);
    // Arguments and results may hold codes or checkout links: only the tool name and the outcome are logged.
    if (apiError.status >= 500 && !(err instanceof PlacementRefused))
      ctx.logger.error({ err, requestId, tool: t.name }, 'mcp tool failed');
    else
      ctx.logger.info({ requestId, accountId: principal.account.id, tool: t.name, error: apiError.code }, 'mcp tool');
    return errorResult(apiError, requestId);
  }
}

/**
 * A server for one stateless MCP POST, bound to the caller the bearer key resolved to. Tools call
 * the same service functions as the REST routers, so prices, rules and shapes are the same.
 */
export function createMcpServer(call: McpCall): McpServer {
  const server = new McpServer({ name: 'wholesale', version: '1.4.0' }, { instructions: INSTRUCTIONS });
  const byName = new Map<string, Tool>();
  for (const t of TOOLS) {
    byName.set(t.name, t);
    server.registerTool(
      t.name,
      {
        title: t.title,
        description: t.description,
        inputSchema: t.input,
        outputSchema: t.output,
        annotations: t.annotations,
      },
      (args: unknown) => invoke(t, args, call),
    );
  }
  // McpServer answers invalid arguments with a free-text error before a tool runs. Agents branch
  // on the spec's stable code, so arguments are parsed in invoke() and a bad one is invalid_input,
  // with its issues in details, as in REST. Listing stays with McpServer.
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const t = byName.get(request.params.name);
    if (!t) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    return invoke(t, request.params.arguments, call);
  });
  return server;
}
