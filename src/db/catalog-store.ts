import type { EntityManager } from '@mikro-orm/postgresql';

// Products, their prices and the imported stock of inventory products: the statements the
// entity API cannot say (row locks, bulk inserts that skip duplicates, grouped counts).

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(',');

/** Locks the product row for the rest of the caller's transaction (stock-bounded placements). */
export async function lockProductRow(em: EntityManager, productId: string): Promise<void> {
  await em.execute('select id from products where id = ? for update', [productId]);
}

export async function decrementLimitedRemaining(em: EntityManager, productId: string, qty: number): Promise<void> {
  await em.execute('update products set limited_remaining = greatest(limited_remaining - ?, 0) where id = ?', [
    qty,
    productId,
  ]);
}

/** Units of each product held by unpaid purchase orders. */
export async function pendingOrderUnits(em: EntityManager, productIds: string[]) {
  return em.execute<{ product_id: string; qty: string }[]>(
    `select product_id, coalesce(sum(qty), 0) as qty from orders
      where kind = 'purchase' and status = 'pending' and product_id in (${placeholders(productIds.length)})
      group by product_id`,
    productIds,
  );
}

/** Unsold imported codes of each product. */
export async function unsoldStockCounts(em: EntityManager, productIds: string[]) {
  return em.execute<{ product_id: string; n: string }[]>(
    `select product_id, count(*) as n from stock_codes
      where order_id is null and product_id in (${placeholders(productIds.length)}) group by product_id`,
    productIds,
  );
}

export async function unsoldStockCount(em: EntityManager, productId: string): Promise<number> {
  const [row] = await em.execute<{ n: string }[]>(
    'select count(*) as n from stock_codes where product_id = ? and order_id is null',
    [productId],
  );
  return Number(row.n);
}

/** Takes the `qty` oldest unsold codes of a product for an order (skipping none: rows are locked). */
export async function takeStockCodes(em: EntityManager, orderId: string, productId: string, qty: number) {
  return em.execute<{ id: string; code: string }[]>(
    `update stock_codes set order_id = ?, sold_at = now()
        where id in (select id from stock_codes where product_id = ? and order_id is null order by id limit ? for update)
        returning id, code`,
    [orderId, productId, qty],
  );
}

/** Imports codes of a product, skipping ones it already has; returns how many were new. */
export async function insertStockCodes(em: EntityManager, productId: string, codes: string[]): Promise<number> {
  const rows = await em.execute<{ id: string }[]>(
    `insert into stock_codes (product_id, code) values ${codes.map(() => '(?, ?)').join(', ')}
       on conflict (product_id, code) do nothing returning id`,
    codes.flatMap((c) => [productId, c]),
  );
  return rows.length;
}

export interface ProductSeedRow {
  id: string;
  slug: string;
  name: string;
  nameEn: string | null;
  currency: string;
  fulfillmentMode: string;
  deliveryType: string;
  productGroupId: string | null;
  denomination: string | null;
  faceCurrency: string | null;
  region: string | null;
  inStock: boolean;
  stockMode: string;
  limitedRemaining: number | null;
  availabilityStatus: string;
  deliveryMode: string;
  redeemFields: unknown;
  redeemFieldsEn: unknown;
  listed: boolean;
  isTest: boolean;
  sortOrder: number;
}

/** Inserts an active product unless its id exists; true when it was inserted. */
export async function insertProductIfNew(em: EntityManager, s: ProductSeedRow): Promise<boolean> {
  const inserted = await em.execute<{ id: string }[]>(
    `insert into products (id, slug, name, name_en, currency, fulfillment_mode, delivery_type, product_group_id, denomination,
         face_currency, region, in_stock, stock_mode, limited_remaining, availability_status, delivery_mode, redeem_fields,
         redeem_fields_en, listed, active, is_test, sort_order)
       values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?::jsonb,?::jsonb,?,true,?,?) on conflict (id) do nothing returning id`,
    [
      s.id,
      s.slug,
      s.name,
      s.nameEn,
      s.currency,
      s.fulfillmentMode,
      s.deliveryType,
      s.productGroupId,
      s.denomination,
      s.faceCurrency,
      s.region,
      s.inStock,
      s.stockMode,
      s.limitedRemaining,
      s.availabilityStatus,
      s.deliveryMode,
      JSON.stringify(s.redeemFields),
      JSON.stringify(s.redeemFieldsEn),
      s.listed,
      s.isTest,
      s.sortOrder,
    ],
  );
  return inserted.length > 0;
}

/** A level's price (a decimal string), unless the product has one for that level. */
export async function insertPriceIfNew(
  em: EntityManager,
  productId: string,
  level: number,
  price: string,
): Promise<void> {
  await em.execute('insert into product_prices (product_id, level, price) values (?, ?, ?) on conflict do nothing', [
    productId,
    level,
    price,
  ]);
}

/** The product's price at `level` as stored, locked for the rest of the caller's transaction (undefined: none yet). */
export async function lockPriceRow(em: EntityManager, productId: string, level: number): Promise<string | undefined> {
  const [row] = await em.execute<{ price: string }[]>(
    'select price from product_prices where product_id = ? and level = ? for update',
    [productId, level],
  );
  return row?.price;
}

/** Sets the product's price at `level`, adding the row when there is none. */
export async function upsertPrice(em: EntityManager, productId: string, level: number, price: string): Promise<void> {
  await em.execute(
    `insert into product_prices (product_id, level, price) values (?, ?, ?)
     on conflict (product_id, level) do update set price = excluded.price`,
    [productId, level, price],
  );
}
