import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../domain/errors';
import { fromDb, isAmount, parseDecimal, toDecimal } from '../../domain/money';
import { lockPriceRow, upsertPrice } from '../../db/catalog-store';
import { ProductPriceSchema, ProductSchema } from '../../db/entities/all-entities';
import { noteProductChange } from './product-updates';

// What a product sells for at each level, as an admin sets it (the staff console). A reseller
// whose order names an `expectedUnitPrice` that no longer holds gets `price_changed`, so a price
// changed here never silently charges a reseller more than they saw; one who asked for
// product.updated is told (./product-updates).

export const LEVELS = [1, 2, 3, 4, 5] as const;

export interface PriceChange {
  productId: string;
  level: number;
  previous: string | null;
  price: string;
}

/** Sets the product's price at `level` (a Decimal string greater than zero). */
export async function setProductPrice(
  em: EntityManager,
  change: { productId: string; level: number; price: string },
): Promise<PriceChange> {
  if (!LEVELS.includes(change.level as (typeof LEVELS)[number]))
    throw new ApiError('invalid_input', 'The level must be 1 to 5');
  if (!isAmount(change.price)) throw new ApiError('invalid_input', 'The price must be an amount like 12.50');
  const cents = parseDecimal(change.price);
  if (cents <= 0) throw new ApiError('invalid_input', 'The price must be more than zero');
  return em.transactional(async (tx) => {
    const product = await tx.findOne(ProductSchema, { id: change.productId });
    if (!product) throw new ApiError('not_found', `No product ${change.productId}`);
    const previous = await lockPriceRow(tx, change.productId, change.level);
    const price = toDecimal(cents);
    await noteProductChange(tx, change.productId);
    await upsertPrice(tx, change.productId, change.level, price);
    return {
      productId: change.productId,
      level: change.level,
      previous: previous === undefined ? null : toDecimal(fromDb(previous)),
      price,
    };
  });
}

/** Every product with its prices by level, in catalog order. */
export async function priceList(em: EntityManager) {
  const products = await em.find(ProductSchema, {}, { orderBy: { sortOrder: 'asc', id: 'asc' } });
  const prices = await em.find(ProductPriceSchema, {});
  return products.map((p) => ({
    id: p.id,
    name: p.name,
    currency: p.currency,
    active: p.active,
    prices: Object.fromEntries(
      prices.filter((r) => r.productId === p.id).map((r) => [r.level, toDecimal(fromDb(r.price))]),
    ) as Record<number, string>,
  }));
}
