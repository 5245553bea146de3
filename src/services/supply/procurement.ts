import type { EntityManager } from '@mikro-orm/postgresql';
import { OrderSchema, type Order } from '../../db/entities/all-entities';
import { ledgerAmountOf } from '../../db/ledger-store';
import { lockOrderRow } from '../../db/orders-store';
import {
  countIssuedCodes,
  insertGiftCardCodes as insertGiftCardRows,
  orderCodes,
  recordSupplierPurchase,
  roundStart,
  supplierPurchasesOf,
  type SupplierPurchaseRow,
} from '../../db/procurement-store';
import { codeBatchOf, insertSupportAction } from '../../db/support-store';
import { ApiError } from '../../domain/errors';
import { fromDb, toDecimal, type Cents } from '../../domain/money';
import {
  SupplierPermanentError,
  SupplierTransientError,
  type ProcureResult,
  type Supplier,
  type SupplierPurchase,
} from '../../providers/supplier';
import {
  deliveryAttentionEventId,
  type DeliverRequest,
  type OrderFacts,
  type RoundResult,
  type SupportActionName,
  type SupportRequest,
} from '../../contracts/procurement-contract';
import { recordEvent } from '../webhooks/events';
import { applyBalanceChange, lockAccount } from '../payments/ledger';
import { cleanManualCodes, dropManualCodes, withCodes } from './manual-codes';
import { recordDelivered } from '../orders/order-delivery';
import { takeSupportRequest } from './support-requests';

// Direct-code procurement (spec 2.4, 3.1, 3.2) and its support actions. Postgres holds the facts:
// each code is stored in issued_codes as it arrives and counted in fulfilled_quantity, but shown
// only once the whole quantity is in. Every step locks the order row and moves it on only from
// the state it expects, so a retried activity never stores a unit twice, delivers twice, or
// refunds twice.

async function lockOrder(em: EntityManager, orderId: string): Promise<Order> {
  await lockOrderRow(em, orderId);
  const order = await em.findOne(OrderSchema, { id: orderId }, { refresh: true });
  if (!order) throw new ApiError('not_found', `Order ${orderId} not found`);
  return order;
}

const isDirectCodePurchase = (o: Order) => o.kind === 'purchase' && o.deliveryType === 'direct_code';
const isProcuring = (o: Order) =>
  isDirectCodePurchase(o) && o.status === 'paid' && o.fulfillmentStatus === 'processing';
const needsAttention = (o: Order) =>
  isDirectCodePurchase(o) && o.status === 'paid' && o.fulfillmentStatus === 'needs_attention';

export function factsOf(order: Order): OrderFacts {
  return {
    status: order.status,
    fulfillmentStatus: order.fulfillmentStatus ?? null,
    qty: order.qty,
    fulfilledQuantity: order.fulfilledQuantity,
  };
}

async function insertGiftCardCodes(em: EntityManager, order: Order, codes: string[]): Promise<string[]> {
  if (codes.length === 0) return [];
  return withCodes(`storing ${codes.length} code(s) of order ${order.id}`, () => insertGiftCardRows(em, order, codes));
}

/** The whole quantity is in: delivered with every code, and `order.delivered` in the same transaction. */
async function completeDelivery(em: EntityManager, order: Order, baseUrl: string): Promise<void> {
  const codes = await orderCodes(em, order.id);
  const now = new Date();
  order.status = 'delivered';
  order.fulfillmentStatus = 'delivered';
  order.fulfilledQuantity = codes.length;
  order.errorCode = null;
  order.resolution = null;
  order.deliveredAt = now;
  order.updatedAt = now;
  await em.flush();
  await recordDelivered(em, order, codes, baseUrl);
}

async function recordSupportAction(
  em: EntityManager,
  orderId: string,
  action: SupportActionName,
  who: SupportRequest,
  payload: Record<string, unknown>,
) {
  await insertSupportAction(em, { subjectId: orderId, action, actor: who.actor, reason: who.reason, payload });
}

export async function loadFacts(em: EntityManager, orderId: string): Promise<OrderFacts> {
  const order = await em.findOne(OrderSchema, { id: orderId });
  if (!order) throw new ApiError('not_found', `Order ${orderId} not found`);
  return factsOf(order);
}

/**
 * One round: ask the supplier for the units still missing (under this round's idempotency key,
 * so a retried activity repeats the same purchase instead of buying again), then store what came.
 * A purchase the supplier may still hold (it was processing, or its answer was lost) is asked for
 * again under its own key instead: nothing is bought under a new key while one is open.
 */
export async function procureRound(
  em: EntityManager,
  supplier: Supplier,
  input: { orderId: string; idempotencyKey: string; baseUrl: string },
  /** Told of each purchase that brought cards, once it is stored (the price check). */
  onBought?: (productId: string, purchase: SupplierPurchase) => Promise<void>,
): Promise<RoundResult> {
  const order = await em.findOne(OrderSchema, { id: input.orderId });
  if (!order) throw new ApiError('not_found', `Order ${input.orderId} not found`);
  if (!isProcuring(order)) return { ...factsOf(order), outcome: 'not_procuring', obtained: 0, error: null };
  const { held, openKey } = await roundStart(em, order.id);
  const remaining = order.qty - held;
  if (remaining <= 0) return storeRound(em, input.orderId, { codes: [] }, input.baseUrl);
  const attempt: PurchaseAttempt = {
    supplier,
    key: openKey ?? input.idempotencyKey,
    requested: remaining,
    wasOpen: openKey !== undefined,
  };
  let result: ProcureResult;
  try {
    result = await supplier.procure(order.productId!, remaining, attempt.key);
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    await recordUnfinishedPurchase(em, order.id, attempt, err, error);
    // Anything but a definite refusal may pass: the next round asks again.
    return {
      ...factsOf(order),
      outcome: err instanceof SupplierPermanentError ? 'permanent' : 'transient',
      obtained: 0,
      error,
    };
  }
  const round = await storeRound(em, input.orderId, result, input.baseUrl, attempt);
  if (result.purchase && onBought) await onBought(order.productId!, result.purchase);
  return round;
}

interface PurchaseAttempt {
  supplier: Supplier;
  key: string;
  requested: number;
  /** The key is an open purchase's, asked for again. */
  wasOpen: boolean;
}

/**
 * What a purchase that brought no cards leaves behind: `open` while the supplier may hold it,
 * `failed` when its transaction ended without cards, `refused` when an open one was refused after
 * all. A plain refusal or outage of a purchase that never existed records nothing.
 */
async function recordUnfinishedPurchase(
  em: EntityManager,
  orderId: string,
  p: PurchaseAttempt,
  err: unknown,
  error: string,
): Promise<void> {
  const row = {
    orderId,
    idempotencyKey: p.key,
    supplier: p.supplier.name ?? 'supplier',
    requested: p.requested,
    units: 0,
    error,
  };
  if (err instanceof SupplierTransientError && err.inFlight) {
    await recordSupplierPurchase(em, { ...row, state: 'open', purchase: err.purchase });
  } else if (err instanceof SupplierPermanentError && (err.purchase || p.wasOpen)) {
    await recordSupplierPurchase(em, { ...row, state: err.purchase ? 'failed' : 'refused', purchase: err.purchase });
  }
}

async function storeRound(
  em: EntityManager,
  orderId: string,
  result: ProcureResult,
  baseUrl: string,
  attempt?: PurchaseAttempt,
): Promise<RoundResult> {
  const { codes } = result;
  return em.transactional(async (tx) => {
    // What was bought is a fact whatever became of the order meanwhile (support may have closed it).
    if (attempt && (result.purchase || attempt.wasOpen)) {
      await recordSupplierPurchase(tx, {
        orderId,
        idempotencyKey: attempt.key,
        supplier: attempt.supplier.name ?? 'supplier',
        state: 'completed',
        requested: attempt.requested,
        units: codes.length,
        purchase: result.purchase,
        error: null,
      });
    }
    const order = await lockOrder(tx, orderId);
    if (!isProcuring(order)) return { ...factsOf(order), outcome: 'not_procuring' as const, obtained: 0, error: null };
    const mine = new Set(await orderCodes(tx, orderId));
    const fresh = [...new Set(codes.map((c) => c.trim()).filter(Boolean))].filter((c) => !mine.has(c));
    const room = Math.max(0, order.qty - mine.size);
    const take = fresh.slice(0, room);
    const inserted = await insertGiftCardCodes(tx, order, take);
    const problems: string[] = [];
    if (inserted.length < take.length)
      problems.push(`${take.length - inserted.length} code(s) from the supplier were already issued to another order`);
    if (fresh.length > room)
      problems.push(`the supplier handed over ${fresh.length - room} code(s) more than asked; they were not stored`);
    order.fulfilledQuantity = mine.size + inserted.length;
    order.updatedAt = new Date();
    if (order.fulfilledQuantity >= order.qty) await completeDelivery(tx, order, baseUrl);
    else await tx.flush();
    return {
      ...factsOf(order),
      outcome: 'obtained' as const,
      obtained: inserted.length,
      error: problems.length ? problems.join('; ') : null,
    };
  });
}

/**
 * The bound passed: needs_attention for support, and `order.delivery_attention` once per order
 * (its fixed id makes a second entry after a resume write nothing). No partial codes in it.
 */
export async function markNeedsAttention(em: EntityManager, orderId: string): Promise<OrderFacts> {
  return em.transactional(async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!isProcuring(order)) return factsOf(order);
    order.fulfillmentStatus = 'needs_attention';
    order.errorCode = 'delivery_needs_attention';
    order.resolution = 'manual_review';
    order.updatedAt = new Date();
    await tx.flush();
    await recordEvent(
      tx,
      order.accountId,
      'order.delivery_attention',
      {
        orderId: order.id,
        externalOrderId: order.externalOrderId ?? null,
        productId: order.productId,
        qty: order.qty,
        deliveryType: 'direct_code',
        fulfillmentStatus: order.fulfillmentStatus,
        fulfilledQuantity: order.fulfilledQuantity,
        errorCode: order.errorCode,
        resolution: order.resolution,
        codes: [],
        redeemUrl: null,
      },
      deliveryAttentionEventId(order.id),
    );
    return factsOf(order);
  });
}

function notInAttention(order: Order): ApiError {
  return new ApiError(
    'invalid_input',
    `Order ${order.id} is not waiting for support (status ${order.status}, fulfillmentStatus ${order.fulfillmentStatus ?? 'null'})`,
    {
      status: order.status,
      fulfillmentStatus: order.fulfillmentStatus ?? null,
    },
  );
}

/**
 * Support: try the supplier again. The order is `processing` again until delivered or back in
 * needs_attention. Like every support action, only on the support request on record (`requestId`).
 */
export async function resumeProcurement(em: EntityManager, orderId: string, req: SupportRequest): Promise<OrderFacts> {
  return em.transactional(async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (isProcuring(order)) return factsOf(order); // this resume committed before; its retry changes nothing
    if (!needsAttention(order)) throw notInAttention(order);
    const who = await takeSupportRequest(tx, req.requestId, orderId, 'resume');
    order.fulfillmentStatus = 'processing';
    order.errorCode = null;
    order.resolution = null;
    order.updatedAt = new Date();
    await tx.flush();
    await recordSupportAction(tx, orderId, 'resume', who, {
      fulfilledQuantity: order.fulfilledQuantity,
      qty: order.qty,
    });
    return factsOf(order);
  });
}

/** Support: deliver codes obtained by hand for exactly the missing units; the order is delivered with all its codes. */
export async function deliverManually(
  em: EntityManager,
  orderId: string,
  req: DeliverRequest,
  baseUrl: string,
): Promise<OrderFacts> {
  return em.transactional(async (tx) => {
    const order = await lockOrder(tx, orderId);
    // The batch goes with the delivery: this delivery committed before and its retry changes nothing.
    if (order.status === 'delivered' && !(await codeBatchOf(tx, req.batchId, orderId))) return factsOf(order);
    if (!needsAttention(order)) throw notInAttention(order);
    const request = await takeSupportRequest(tx, req.requestId, orderId, 'deliver');
    const batch = request.batch_id ? await codeBatchOf(tx, request.batch_id, orderId) : undefined;
    if (!batch) throw new ApiError('invalid_input', 'The staged codes are gone; send them again');
    const codes = cleanManualCodes(batch);
    const stored = await orderCodes(tx, orderId);
    const missing = order.qty - stored.length;
    if (codes.length !== missing) {
      throw new ApiError('invalid_input', `This order is missing ${missing} code(s); ${codes.length} given`, {
        missing,
        given: codes.length,
      });
    }
    const taken = await withCodes('checking the given codes', () => countIssuedCodes(tx, codes));
    if (taken > 0) {
      throw new ApiError('invalid_input', `${taken} of the given codes were already issued; nothing was delivered`, {
        alreadyIssued: taken,
      });
    }
    if ((await insertGiftCardCodes(tx, order, codes)).length !== codes.length) {
      throw new ApiError('invalid_input', 'Some of the given codes were issued meanwhile; nothing was delivered');
    }
    await recordSupportAction(tx, orderId, 'deliver', request, {
      units: codes.length,
      obtainedFromSupplier: stored.length,
    });
    await dropManualCodes(tx, request.batch_id!);
    await completeDelivery(tx, order, baseUrl);
    return factsOf(order);
  });
}

/** One purchase from the supplier as a refund reports it: its transaction, what it bought and delivered, and its cost. */
export function boughtFromSupplier(p: SupplierPurchaseRow) {
  return {
    supplier: p.supplier,
    transactionId: p.transaction_id,
    state: p.state,
    /** Units in the supplier's transaction, and the cards of it that came. */
    quantity: p.quantity,
    units: p.units,
    unitCost: p.unit_cost,
    totalCost: p.total_cost,
    currency: p.currency,
  };
}

/**
 * Support: refund the undelivered units (unit price × units not obtained) to the balance, for
 * intent orders too, as a `refund` ledger row that also gives back the spending. Codes already
 * obtained are kept by the reseller: the order is `refunded` and shows them (see deliveredCodes).
 */
export async function refundUndelivered(
  em: EntityManager,
  orderId: string,
  req: SupportRequest,
  levelThresholds: readonly Cents[],
): Promise<OrderFacts & { refundedUnits: number; refundedAmount: string }> {
  return em.transactional(async (tx) => {
    const peek = await tx.findOne(OrderSchema, { id: orderId });
    if (!peek) throw new ApiError('not_found', `Order ${orderId} not found`);
    // Same lock order as placement and payment: the account, then the order.
    const account = await lockAccount(tx, peek.accountId);
    const order = await lockOrder(tx, orderId);
    const undelivered = order.qty - (await orderCodes(tx, orderId)).length;
    const amount = fromDb(order.unitPrice) * undelivered;
    if (order.status === 'refunded' && isDirectCodePurchase(order)) {
      const done = await ledgerAmountOf(tx, `refund:${orderId}`);
      return { ...factsOf(order), refundedUnits: undelivered, refundedAmount: toDecimal(done ? fromDb(done) : 0) };
    }
    if (!needsAttention(order)) throw notInAttention(order);
    const who = await takeSupportRequest(tx, req.requestId, orderId, 'refund');
    if (amount > 0) {
      await applyBalanceChange(
        tx,
        account,
        {
          type: 'refund',
          amount,
          spending: -amount,
          orderId,
          idempotencyKey: `refund:${orderId}`,
          note: `refund of ${undelivered} undelivered unit(s)`,
        },
        levelThresholds,
      );
    }
    order.status = 'refunded';
    order.fulfillmentStatus = 'refunded';
    order.errorCode = null;
    order.resolution = null;
    order.updatedAt = new Date();
    await tx.flush();
    // What was bought and what was not: the units refunded and the codes released, and (for a
    // supplier that reports its purchases) each purchase with its transaction and cost.
    const purchases = (await supplierPurchasesOf(tx, orderId)).map(boughtFromSupplier);
    await recordSupportAction(tx, orderId, 'refund', who, {
      refundedUnits: undelivered,
      amount: toDecimal(amount),
      releasedCodes: order.qty - undelivered,
      ...(purchases.length > 0 ? { supplierPurchases: purchases } : {}),
    });
    return { ...factsOf(order), refundedUnits: undelivered, refundedAmount: toDecimal(amount) };
  });
}
