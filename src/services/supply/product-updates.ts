import type { EntityManager } from '@mikro-orm/postgresql';
import { pendingOrderUnits, unsoldStockCount } from '../../db/catalog-store';
import {
  claimDueMarks,
  deleteMark,
  insertProductUpdatedEvents,
  markProductChanged,
} from '../../db/product-updates-store';
import { ProductSchema, type Product } from '../../db/entities/all-entities';
import { LEVELS } from '../../domain/levels';
import { toDecimal } from '../../domain/money';
import { listingBlock, priceTable, sellableOf } from './catalog';

// product.updated: a product's price at an account's level, its stock or its availability changed.
// A change to the catalog (a price set, a stock import) marks the product in its own transaction,
// with the product's state before it. The outbox relay (webhook-dispatcher.ts) announces a mark
// once its first change is PRODUCT_UPDATE_COALESCE_SECONDS old: the state now against the state
// before, level by level, one event per subscribed account whose view changed. The mark is a row,
// so a restart loses nothing; changes within the window are one event, and changes that cancel
// out are none.

/** What decides a product's view at any level, as the mark stores it (JSON). */
interface ProductState {
  active: boolean;
  currency: string;
  /** Cents by level. */
  prices: Record<string, number>;
  inStock: boolean;
  blocked: boolean;
  stockMode: Product['stockMode'];
  /** Units sellable now; null: unbounded (on demand). */
  sellable: number | null;
  availabilityStatus: Product['availabilityStatus'];
  deliveryMode: Product['deliveryMode'];
}

const CHANGES = ['price', 'inStock', 'available', 'stock', 'availabilityStatus', 'deliveryMode'] as const;

/** Marks announced per transaction: a burst of marks is worked off in several short ones. */
const BATCH = 20;

/** Read in the caller's transaction, one statement after another (a transaction is one connection). */
async function productState(em: EntityManager, productId: string): Promise<ProductState | undefined> {
  const product = await em.findOne(ProductSchema, { id: productId }, { refresh: true });
  if (!product) return undefined;
  const prices = await priceTable(em, [productId]);
  const held = product.stockMode === 'on_demand' ? 0 : Number((await pendingOrderUnits(em, [productId]))[0]?.qty ?? 0);
  const unsold = product.stockMode === 'inventory' ? await unsoldStockCount(em, productId) : 0;
  const units = sellableOf(product, held, unsold);
  return {
    active: product.active,
    currency: product.currency,
    prices: Object.fromEntries(
      [...(prices.get(productId) ?? new Map())].map(([level, cents]) => [String(level), cents]),
    ),
    inStock: product.inStock,
    blocked: listingBlock(product) !== undefined,
    stockMode: product.stockMode,
    sellable: Number.isFinite(units) ? units : null,
    availabilityStatus: product.availabilityStatus,
    deliveryMode: product.deliveryMode,
  };
}

/** The product as a reseller at `level` sees it in GET /products (the fields product.updated carries). */
function viewAt(s: ProductState, level: number, cap: number) {
  const cents = s.prices[String(level)] ?? s.prices['1'];
  const sellable = s.sellable ?? Number.POSITIVE_INFINITY;
  return {
    price: cents === undefined ? null : toDecimal(cents),
    currency: s.currency,
    inStock: s.inStock,
    available: !s.blocked && sellable >= 1,
    stockMode: s.stockMode,
    stock: s.stockMode === 'inventory' ? Math.min(sellable, cap) : null,
    stockCapped: s.stockMode === 'inventory' && sellable > cap,
    availabilityStatus: s.availabilityStatus,
    deliveryMode: s.deliveryMode,
  };
}

/**
 * Marks the product as changing: call it in the transaction of the change, before the change, so
 * the mark holds the state the change starts from.
 */
export async function noteProductChange(em: EntityManager, productId: string): Promise<void> {
  const before = await productState(em, productId);
  if (before) await markProductChanged(em, productId, before);
}

/**
 * Announces the marks whose window has passed: for each level whose view changed, a product.updated
 * to every account at that level whose endpoint asked for it. Returns the events written.
 */
export async function emitDueProductUpdates(
  em: EntityManager,
  opts: { coalesceSeconds: number; stockDisplayCap: number },
): Promise<number> {
  let written = 0;
  for (;;) {
    const { claimed, events } = await em.fork().transactional(async (tx) => {
      const marks = await claimDueMarks(tx, opts.coalesceSeconds, BATCH);
      let events = 0;
      for (const mark of marks) {
        const after = await productState(tx, mark.product_id);
        // An inactive product is not in the catalog any more: there is nothing to read about it.
        if (after?.active) {
          for (const level of LEVELS) {
            const was = viewAt(mark.before as ProductState, level, opts.stockDisplayCap);
            const now = viewAt(after, level, opts.stockDisplayCap);
            const changed = CHANGES.filter((k) => was[k] !== now[k]);
            if (changed.length > 0 && now.price !== null) {
              events += await insertProductUpdatedEvents(tx, level, { productId: mark.product_id, changed, ...now });
            }
          }
        }
        await deleteMark(tx, mark.product_id);
      }
      return { claimed: marks.length, events };
    });
    written += events;
    if (claimed < BATCH) return written;
  }
}
