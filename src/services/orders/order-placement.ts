import type { EntityManager } from '@mikro-orm/postgresql';
import { generateCode, newId } from '../../codes';
import { lockProductRow } from '../../db/catalog-store';
import { OrderSchema, ProductSchema, type Order, type Product } from '../../db/entities/all-entities';
import { currentBalanceAndLevel, readPlacement, writeBalanceOrder } from '../../db/placement-store';
import { ApiError } from '../../domain/errors';
import { raisedLevel, type Level } from '../../domain/levels';
import { fromDb, parseDecimal, toDecimal, type Cents } from '../../domain/money';
import { findActiveProduct, listingBlock, priceAt, priceTable, sellableUnits } from '../supply/catalog';
import { lockAccount, type LockedAccount } from '../payments/ledger';
import {
  assertSameRequest,
  checkTestProductRules,
  findByExternalId,
  redeemUrlFor,
  type PlaceOrderInput,
} from './orders';

// The worker's side of an order: the placement the order workflow's local activity runs (check,
// debit, issue codes, or open the checkout of an intent order). What happens once an order is paid
// is its delivery (order-delivery.ts).

/** True unless the order was placed by this very request (a retry of it after a lost reply). */
export const isReplay = (order: Pick<Order, 'placementId'>, placementId: string | undefined) =>
  !placementId || order.placementId !== placementId;

/** What a placement answers with: the order's id, state and what its response shows (codes and links aside). */
export type PlacedOrder = Pick<
  Order,
  | 'id'
  | 'amount'
  | 'currency'
  | 'status'
  | 'fulfillmentStatus'
  | 'payment'
  | 'checkoutUrl'
  | 'deliveryType'
  | 'fulfilledQuantity'
> & {
  /** The codes this placement issued, in the order the response lists them (a new balance order's write). */
  issuedCodes?: string[];
};

export interface OrderSettings {
  levelThresholds: readonly Cents[];
  publicBaseUrl: string;
}

/**
 * Re-validates stock for `qty` units counting outstanding orders. Stock-bounded products are
 * locked for the rest of the transaction so two placements cannot sell the same unit.
 */
async function reserveStock(em: EntityManager, product: Product, qty: number): Promise<void> {
  if (product.stockMode !== 'on_demand') {
    await lockProductRow(em, product.id);
    const fresh = await em.findOne(ProductSchema, { id: product.id }, { refresh: true });
    if (fresh) product.limitedRemaining = fresh.limitedRemaining;
  }
  const sellable = (await sellableUnits(em, [product])).get(product.id) ?? 0;
  if (sellable <= 0) throw new ApiError('out_of_stock', `Product ${product.id} is currently out of stock`);
  if (sellable < qty) throw new ApiError('insufficient_stock', `Only part of the requested qty is available`, {});
}

interface Placement {
  account: Awaited<ReturnType<typeof lockAccount>>;
  product: Product;
  unitPrice: Cents;
}

/** The product and its price table, read before the account is locked (they do not depend on it). */
interface Offer {
  product: Product | null;
  prices: Awaited<ReturnType<typeof priceTable>>;
}

async function readOffer(tx: EntityManager, productId: string): Promise<Offer> {
  const product = await tx.findOne(ProductSchema, { id: productId, active: true });
  return { product, prices: product ? await priceTable(tx, [product.id]) : new Map() };
}

/**
 * The checks of spec 4.3 inside the caller's transaction, with the account locked by the caller:
 * product, listing, level price against expectedUnitPrice, and stock counting outstanding orders.
 * The product and prices are read before the lock, so the critical section of one account's
 * orders holds only the statements that depend on its row.
 */
async function checkPlacement(
  tx: EntityManager,
  input: PlaceOrderInput,
  account: Placement['account'],
  offer: Offer,
): Promise<Placement> {
  const product = offer.product ?? (await findActiveProduct(tx, input.productId));
  const block = listingBlock(product);
  if (block === 'out_of_stock')
    throw new ApiError('out_of_stock', `Product ${product.id} is currently not purchasable`);
  if (block) throw new ApiError('fulfillment_unavailable', `Delivery for ${product.id} is currently unavailable`);
  const unitPrice = priceAt(offer.prices.get(product.id), account.level);
  if (input.expectedUnitPrice !== undefined && parseDecimal(input.expectedUnitPrice) !== unitPrice) {
    throw new ApiError('price_changed', 'The unit price at your level differs from expectedUnitPrice', {
      actualUnitPrice: toDecimal(unitPrice),
    });
  }
  await reserveStock(tx, product, input.qty);
  return { account, product, unitPrice };
}

/** Opens the hosted checkout of an intent order (the payment provider's call). */
export type OpenCheckout = (
  orderId: string,
  amount: Cents,
  currency: string,
  description: string,
) => Promise<{ checkoutId: string; checkoutUrl: string }>;

export interface IntentSettings extends OrderSettings {
  openCheckout: OpenCheckout;
  paymentWindowSeconds: number;
}

/**
 * Places an order (spec 4.3): with the account locked, replay or conflict on an existing
 * externalOrderId, check product, price and stock, then in balance mode debit, write the ledger,
 * issue codes and emit `order.delivered` in one transaction. An intent order is checked, then
 * its checkout is opened outside any transaction (a provider failure leaves no order behind),
 * then it is checked again and stored `pending` with its checkout URL.
 */
export async function placeOrder(
  em: EntityManager,
  input: PlaceOrderInput,
  settings: OrderSettings | IntentSettings,
): Promise<{ order: PlacedOrder; reused: boolean }> {
  checkTestProductRules(input);
  // Read in every placement transaction, in this order: the offer (before the lock), the account
  // locked (it serializes the reseller's orders), and an order already placed under this
  // externalOrderId, which answers instead (a replay, or a conflict if the request differs).
  const underLock = async (tx: EntityManager) => {
    const offer = await readOffer(tx, input.productId);
    const account = await lockAccount(tx, input.accountId);
    const existing = await findByExternalId(tx, input.accountId, input.externalOrderId);
    if (existing) assertSameRequest(existing, input);
    return { offer, account, existing };
  };
  const orderId = newId('ord');
  const newOrder = (tx: EntityManager, p: Placement, extra: Partial<Order>) =>
    tx.create(OrderSchema, {
      id: orderId,
      accountId: input.accountId,
      kind: 'purchase',
      channel: 'wholesale_api',
      source: input.source,
      externalOrderId: input.externalOrderId,
      productId: p.product.id,
      qty: input.qty,
      unitPrice: toDecimal(p.unitPrice),
      amount: toDecimal(p.unitPrice * input.qty),
      currency: p.product.currency,
      payment: input.payment,
      placementId: input.placementId ?? null,
      status: 'pending',
      deliveryType: p.product.deliveryType,
      fulfillmentStatus: p.product.deliveryType === 'direct_code' ? 'awaiting_payment' : null,
      ...extra,
    });

  if (input.payment === 'balance') return placeBalanceOrder(em, input, settings, orderId);

  if (!('openCheckout' in settings)) throw new Error('intent mode needs a payment provider');
  const quote = await em.transactional(async (tx) => {
    const { offer, account, existing } = await underLock(tx);
    return existing ? { existing } : { placement: await checkPlacement(tx, input, account, offer) };
  });
  if (quote.existing) return { order: quote.existing, reused: isReplay(quote.existing, input.placementId) };
  const { product, unitPrice } = quote.placement!;
  const checkout = await settings.openCheckout(
    orderId,
    unitPrice * input.qty,
    product.currency,
    `${input.qty} × ${product.nameEn ?? product.name}`,
  );
  return em.transactional(async (tx) => {
    // A concurrent request may have placed it meanwhile; that order wins and this checkout lapses.
    const { offer, account, existing } = await underLock(tx);
    if (existing) return { order: existing, reused: isReplay(existing, input.placementId) };
    const p = await checkPlacement(tx, input, account, offer);
    const order = newOrder(tx, p, {
      checkoutId: checkout.checkoutId,
      checkoutUrl: checkout.checkoutUrl,
      expiresAt: new Date(Date.now() + settings.paymentWindowSeconds * 1000),
    });
    await tx.flush();
    return { order, reused: false };
  });
}

/**
 * The write found the account's level changed since the read (its price may differ), or another
 * placement of this externalOrderId committed first (a replay now): read again.
 */
class ReadAgain extends Error {}
/** A new platform code collided with an issued one: generate the batch again. */
class CodeCollision extends Error {}

/**
 * A balance order (spec 4.3) in two statements: everything the checks need read at once with no
 * row locked, then one write that debits the account only if its balance covers the amount and its
 * level (the price's) is unchanged, and in the same statement inserts the order, the ledger row,
 * the codes and `order.delivered` (src/db/placement-store.ts). For an on-demand product that statement is
 * the whole transaction, so the account row is locked only while Postgres runs it. A stock-bounded
 * product is locked by `reserveStock` first, in a transaction around the checks and the write. A
 * level raised in between (a concurrent top-up) or a colliding new code reads and writes again.
 */
async function placeBalanceOrder(
  em: EntityManager,
  input: PlaceOrderInput,
  settings: OrderSettings,
  orderId: string,
): Promise<{ order: PlacedOrder; reused: boolean }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await placeBalanceOnce(em, input, settings, orderId);
    } catch (err) {
      if (!(err instanceof ReadAgain || err instanceof CodeCollision) || attempt >= 5) throw err;
    }
  }
}

async function placeBalanceOnce(
  em: EntityManager,
  input: PlaceOrderInput,
  settings: OrderSettings,
  orderId: string,
): Promise<{ order: PlacedOrder; reused: boolean }> {
  const read = await readPlacement(em, input);
  if (!read.account) throw new ApiError('not_found', 'Account not found');
  if (read.existing) {
    assertSameRequest(read.existing, input);
    return { order: read.existing, reused: isReplay(read.existing, input.placementId) };
  }
  const account: LockedAccount = {
    id: input.accountId,
    level: read.account.level as Level,
    balance: fromDb(read.account.balance),
    cumulativeSpending: fromDb(read.account.cumulativeSpending),
  };
  const offer: Offer = {
    product: read.product ?? null,
    prices: new Map([
      [input.productId, new Map(Object.entries(read.prices).map(([level, price]) => [Number(level), fromDb(price)]))],
    ]),
  };
  const stockBounded = !!read.product && read.product.stockMode !== 'on_demand';
  const place = (tx: EntityManager) => checkAndWrite(tx, input, settings, orderId, account, offer, !stockBounded);
  return stockBounded ? em.transactional(place) : place(em);
}

async function checkAndWrite(
  tx: EntityManager,
  input: PlaceOrderInput,
  settings: OrderSettings,
  orderId: string,
  account: LockedAccount,
  offer: Offer,
  atomic: boolean,
): Promise<{ order: PlacedOrder; reused: boolean }> {
  const { product, unitPrice } = await checkPlacement(tx, input, account, offer);
  const amount = unitPrice * input.qty;
  if (account.balance < amount)
    throw new ApiError('insufficient_balance', 'Balance too low for this order; top up or lower qty');
  const direct = product.deliveryType === 'direct_code';
  const written = await writeBalanceOrder(tx, {
    orderId,
    accountId: input.accountId,
    level: account.level,
    // A purchase moves money from balance to spending, so their sum (what levels count) is unchanged.
    newLevel: raisedLevel(account.level, account.cumulativeSpending + account.balance, settings.levelThresholds),
    amount: toDecimal(amount),
    unitPrice: toDecimal(unitPrice),
    product,
    qty: input.qty,
    source: input.source,
    externalOrderId: input.externalOrderId,
    placementId: input.placementId ?? null,
    newCodes: direct || product.stockMode === 'inventory' ? [] : Array.from({ length: input.qty }, generateCode),
    event: direct
      ? undefined
      : {
          id: newId('evt'),
          payload: {
            orderId,
            externalOrderId: input.externalOrderId,
            productId: product.id,
            qty: input.qty,
            redeemUrl: redeemUrlFor(settings.publicBaseUrl, product.deliveryType),
            deliveryType: product.deliveryType,
          },
        },
    lowEventId: newId('evt'),
    atomic,
  });
  if (written.collided) throw new CodeCollision();
  if (written.raced) throw new ReadAgain();
  if (!written.debited) {
    const now = await currentBalanceAndLevel(tx, input.accountId);
    if (now && fromDb(now.balance) < amount)
      throw new ApiError('insufficient_balance', 'Balance too low for this order; top up or lower qty');
    throw new ReadAgain();
  }
  if (!direct && product.stockMode === 'inventory') {
    if (written.taken !== input.qty) throw new ApiError('insufficient_stock', 'Stock changed while placing the order');
    if (written.codes.length !== input.qty) {
      throw new ApiError(
        'stock_unavailable',
        'Imported stock holds a code that was already issued; support has to check the stock',
      );
    }
  } else if (!direct && written.codes.length !== input.qty) {
    throw new CodeCollision();
  }
  return {
    order: {
      id: orderId,
      amount: toDecimal(amount),
      currency: product.currency,
      status: direct ? 'paid' : 'delivered',
      fulfillmentStatus: direct ? 'processing' : null,
      payment: 'balance',
      checkoutUrl: null,
      deliveryType: product.deliveryType,
      fulfilledQuantity: direct ? 0 : input.qty,
      issuedCodes: written.codes,
    },
    reused: false,
  };
}
