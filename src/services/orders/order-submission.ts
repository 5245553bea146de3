import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { OrderSchema, ProductSchema, type Order } from '../../db/entities/all-entities';
import { fromDb, toDecimal } from '../../domain/money';
import { checkoutAndCodes, purchaseWithCodes } from '../../db/orders-store';
import { codeLabel, ordersPlaced } from '../../metrics/registry';
import { ApiError } from '../../domain/errors';
import type { TemporalHandle } from '../../temporal/client';
import {
  placeOrderUpdate,
  type PlacedView,
  type Placement,
  type PlaceOrderRequest,
} from '../../contracts/orders-contract';
import { orderStarter } from '../../temporal/starters';
import type { TimingConfig } from '../../temporal/timing';
import { isTemporalUnavailable } from '../../temporal/temporal-errors';
import { timed, timedAt } from '../../metrics/server-timing';
import { openSecrets, type AnswerKey } from '../../temporal/sealed-answer';
import type { PlacementGate } from '../admission';
import {
  assertSameRequest,
  checkTestProductRules,
  deliveredCodes,
  findByExternalId,
  redeemUrlFor,
  showsCodes,
  type PlaceOrderInput,
} from './orders';

/** The create response of spec 2.4. */
export interface OrderCreateResponse {
  orderId: string;
  externalOrderId: string;
  amount: string;
  status: Order['status'];
  codes: string[];
  checkoutUrl?: string;
  paymentUrl?: string;
  redeemUrl: string | null;
  deliveryType: 'redemption' | 'direct_code';
  fulfillmentStatus: string | null;
  fulfilledQuantity: number;
  errorCode: string | null;
  resolution: string | null;
  reused: boolean;
}

export interface SubmitDeps {
  em: EntityManager;
  temporal: TemporalHandle;
  baseUrl: string;
  /** Where the order workflow's durations come from. */
  config: TimingConfig;
  /** Admission control of this API process (absent: the placement is let through). */
  admission?: PlacementGate;
  /** This API process's key for sealed answers (absent: a new order's codes and link are read from Postgres). */
  answerKey?: AnswerKey;
}

/**
 * POST /orders and MCP purchase_codes: the order workflow through update-with-start, where
 * concurrent retries of one externalOrderId meet and are placed once, and where a replay is
 * answered (the placement finds the order in Postgres). A new placement's answer carries what the
 * response shows, its codes and checkout link sealed to this process (src/temporal/sealed-answer.ts);
 * without a key they are read by the order's id. A replay's order is read as it is now.
 */
export async function submitOrder(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  try {
    const response = await submit(deps, input);
    if (!response.reused)
      ordersPlaced.inc({
        product_type: response.deliveryType,
        payment: input.payment,
        outcome: response.status,
        code: '',
      });
    return response;
  } catch (err) {
    if (err instanceof ApiError && err.status < 500 && err.code !== 'invalid_input') {
      const product = await deps.em
        .fork()
        .findOne(ProductSchema, { id: input.productId })
        .catch(() => null);
      ordersPlaced.inc({
        product_type: product?.deliveryType ?? 'unknown',
        payment: input.payment,
        outcome: 'rejected',
        code: codeLabel(err.code),
      });
    }
    throw err;
  }
}

async function submit(deps: SubmitDeps, input: PlaceOrderInput): Promise<OrderCreateResponse> {
  checkTestProductRules(input);
  // One id for this request, kept across the retries of its update: Temporal answers a repeated
  // update id with the first outcome, and Postgres remembers which request placed the order.
  const placementId = randomUUID();
  const place = () => placeThroughWorkflow(deps, input, placementId);
  let placement: Placement;
  try {
    placement = await timed('engine', () =>
      deps.admission ? deps.admission.run('order', input.accountId, input.payment === 'balance', place) : place(),
    );
  } catch (err) {
    // Shed, past its deadline or the engine out of reach: an order already placed under this
    // externalOrderId is still answered, from Postgres (if Postgres answers; else the 503 stands).
    if (!isUnavailable(err)) throw err;
    const earlier = await answerFromPostgres(deps, input, placementId).catch((readErr: unknown) => {
      if (readErr instanceof ApiError) throw readErr;
      return undefined;
    });
    if (earlier) return earlier;
    throw err;
  }
  if (placement.outcome === 'rejected') {
    throw new ApiError(placement.rejection.code, placement.rejection.message, placement.rejection.details);
  }
  if (!placement.reused && placement.shown)
    return newOrderResponse(deps, input, placementId, { ...placement, shown: placement.shown });
  // A replay: the order and its codes as they are now, in one statement.
  const placed = await timed('read', () => findPurchaseWithCodes(deps.em.fork(), { id: placement.orderId }));
  if (!placed) throw new Error(`placed order ${placement.orderId} is not in Postgres`);
  return createResponse(deps.em, placed.order, {
    baseUrl: deps.baseUrl,
    reused: placement.reused,
    withCheckout: input.payment === 'intent',
    prefetched: { codesFor: placed.order.status, codes: placed.codes },
  });
}

/** The create response of an order this request placed, from the placement's answer. */
async function newOrderResponse(
  deps: SubmitDeps,
  input: PlaceOrderInput,
  placementId: string,
  placed: Extract<Placement, { outcome: 'placed' }> & { shown: PlacedView },
): Promise<OrderCreateResponse> {
  const { status, shown } = placed;
  const withCodes = showsCodes({ status: status as Order['status'], deliveryType: shown.deliveryType });
  const withCheckout = input.payment === 'intent' && status === 'pending';
  const secrets =
    withCodes || withCheckout
      ? (openSecrets(deps.answerKey, shown.sealed, placementId) ??
        (await timed('read', () => checkoutAndCodes(deps.em.fork(), placed.orderId))))
      : undefined;
  const checkoutUrl = withCheckout ? secrets?.checkoutUrl : null;
  return {
    orderId: placed.orderId,
    externalOrderId: input.externalOrderId,
    amount: shown.amount,
    status: status as Order['status'],
    codes: withCodes ? (secrets?.codes ?? []) : [],
    ...(checkoutUrl ? { checkoutUrl, paymentUrl: checkoutUrl } : {}),
    redeemUrl: redeemUrlFor(deps.baseUrl, shown.deliveryType),
    deliveryType: shown.deliveryType,
    fulfillmentStatus: placed.fulfillmentStatus,
    fulfilledQuantity: shown.fulfilledQuantity,
    // Set later in an order's life (procurement, support), never at its placement.
    errorCode: null,
    resolution: null,
    reused: false,
  };
}

const isUnavailable = (err: unknown) =>
  (err instanceof ApiError && err.code === 'service_unavailable') || isTemporalUnavailable(err);

/**
 * The order under this externalOrderId as it is now, when there is one that needs nothing of the
 * workflow (a pending intent order whose checkout link was lost gets its new link there).
 */
async function answerFromPostgres(
  deps: SubmitDeps,
  input: PlaceOrderInput,
  placementId: string,
): Promise<OrderCreateResponse | undefined> {
  const found = await findPurchaseWithCodes(deps.em.fork(), {
    accountId: input.accountId,
    externalOrderId: input.externalOrderId,
  });
  if (!found) return undefined;
  const { order, codes } = found;
  assertSameRequest(order, input);
  if (input.payment === 'intent' && order.status === 'pending' && !order.checkoutUrl) return undefined;
  return createResponse(deps.em, order, {
    baseUrl: deps.baseUrl,
    reused: order.placementId !== placementId,
    withCheckout: input.payment === 'intent',
    prefetched: { codesFor: order.status, codes },
  });
}

async function placeThroughWorkflow(deps: SubmitDeps, input: PlaceOrderInput, placementId: string): Promise<Placement> {
  const request: PlaceOrderRequest = {
    productId: input.productId,
    qty: input.qty,
    payment: input.payment,
    expectedUnitPrice: input.expectedUnitPrice,
    source: input.source,
    placementId,
    ...(deps.answerKey ? { sealTo: deps.answerKey.publicKey } : {}),
  };
  timedAt('sent');
  return orderStarter(deps.temporal, deps.config, input).updateWithStart(placeOrderUpdate, {
    args: [request],
    updateId: placementId,
    attempts: 3,
    withDeadline: true,
    // Another request's placement won the race for this externalOrderId.
    onGiveUp: async () =>
      (await findByExternalId(deps.em.fork(), input.accountId, input.externalOrderId))
        ? new ApiError(
            'duplicate_order',
            'A concurrent request for this externalOrderId raced; look the order up by externalOrderId',
          )
        : undefined,
  });
}

/**
 * A purchase by id or externalOrderId with its codes as `deliveredCodes` shows them, in one
 * statement (the create response's read).
 */
async function findPurchaseWithCodes(
  em: EntityManager,
  where: { id: string } | { accountId: string; externalOrderId: string },
): Promise<{ order: Order; codes: string[] } | undefined> {
  const found = await purchaseWithCodes(em, where);
  if (!found) return undefined;
  const order = em.map(OrderSchema, found.columns);
  return { order, codes: showsCodes(order) ? found.codes : [] };
}

async function createResponse(
  em: EntityManager,
  order: Order,
  opts: {
    baseUrl: string;
    reused: boolean;
    withCheckout: boolean;
    /** The codes read alongside the order, as `deliveredCodes` reads them for status `codesFor`. */
    prefetched?: { codesFor: string; codes: string[] };
  },
): Promise<OrderCreateResponse> {
  const showCheckout = opts.withCheckout && order.status === 'pending' && !!order.checkoutUrl;
  return {
    orderId: order.id,
    externalOrderId: order.externalOrderId!,
    amount: toDecimal(fromDb(order.amount)),
    status: order.status,
    codes: opts.prefetched?.codesFor === order.status ? opts.prefetched.codes : await deliveredCodes(em, order),
    ...(showCheckout ? { checkoutUrl: order.checkoutUrl!, paymentUrl: order.checkoutUrl! } : {}),
    redeemUrl: redeemUrlFor(opts.baseUrl, order.deliveryType),
    deliveryType: order.deliveryType as 'redemption' | 'direct_code',
    fulfillmentStatus: order.fulfillmentStatus ?? null,
    fulfilledQuantity: order.fulfilledQuantity,
    errorCode: order.errorCode ?? null,
    resolution: order.resolution ?? null,
    reused: opts.reused,
  };
}
