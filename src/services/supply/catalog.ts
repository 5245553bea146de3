import type { EntityManager } from '@mikro-orm/postgresql';
import { pendingOrderUnits, unsoldStockCounts } from '../../db/catalog-store';
import { productCostRows } from '../../db/supplier-catalog-store';
import { ProductPriceSchema, ProductSchema, type Product } from '../../db/entities/all-entities';
import { ApiError } from '../../domain/errors';
import { fromDb, toDecimal, type Cents } from '../../domain/money';

export interface ProductView {
  id: string;
  slug: string;
  name: string;
  nameEn: string | null;
  price: string;
  retailPrice: string;
  currency: string;
  fulfillmentMode: Product['fulfillmentMode'];
  deliveryType: Product['deliveryType'];
  productGroupId: string | null;
  denomination: string | null;
  faceCurrency: string | null;
  region: string | null;
  inStock: boolean;
  available: boolean;
  stockMode: Product['stockMode'];
  stock: number | null;
  stockCapped: boolean;
  availabilityStatus: Product['availabilityStatus'];
  deliveryMode: Product['deliveryMode'];
  redeemFields: Product['redeemFields'];
  redeemFieldsEn: Product['redeemFieldsEn'];
}

export interface AvailabilityView {
  productId: string;
  qty: number;
  available: boolean;
  stockMode: Product['stockMode'];
  productGroupId: string | null;
  denomination: string | null;
  faceCurrency: string | null;
  region: string | null;
  deliveryType: Product['deliveryType'];
  unitPrice: string;
  checkedAt: number;
  availabilityStatus: Product['availabilityStatus'];
  deliveryMode: Product['deliveryMode'];
}

/** Units of `productId` held by unpaid intent orders: outstanding orders count against stock. */
async function outstandingUnits(em: EntityManager, productIds: string[]): Promise<Map<string, number>> {
  if (productIds.length === 0) return new Map();
  const rows = await pendingOrderUnits(em, productIds);
  return new Map(rows.map((r) => [r.product_id, Number(r.qty)]));
}

async function inventoryCounts(em: EntityManager, productIds: string[]): Promise<Map<string, number>> {
  if (productIds.length === 0) return new Map();
  const rows = await unsoldStockCounts(em, productIds);
  return new Map(rows.map((r) => [r.product_id, Number(r.n)]));
}

/** Units that could be sold now (Infinity for on_demand), after outstanding orders. */
export async function sellableUnits(em: EntityManager, products: Product[]): Promise<Map<string, number>> {
  const [outstanding, inventory] = await Promise.all([
    // An on-demand product is never short, so its outstanding orders need not be counted.
    outstandingUnits(
      em,
      products.filter((p) => p.stockMode !== 'on_demand').map((p) => p.id),
    ),
    inventoryCounts(
      em,
      products.filter((p) => p.stockMode === 'inventory').map((p) => p.id),
    ),
  ]);
  return new Map(products.map((p) => [p.id, sellableOf(p, outstanding.get(p.id) ?? 0, inventory.get(p.id) ?? 0)]));
}

/** Units of one product that could be sold now, from the units `held` by unpaid orders and its `unsold` imported codes. */
export function sellableOf(p: Product, held: number, unsold: number): number {
  if (p.stockMode === 'on_demand') return Number.POSITIVE_INFINITY;
  if (p.stockMode === 'inventory') return Math.max(0, unsold - held);
  return Math.max(0, (p.limitedRemaining ?? 0) - held);
}

/** Whether the listing accepts orders at all, before stock: the reason when it does not. */
export function listingBlock(product: Product): 'out_of_stock' | 'fulfillment_unavailable' | undefined {
  if (!product.inStock) return 'out_of_stock';
  if (product.availabilityStatus === 'unavailable' || product.deliveryMode === 'unavailable')
    return 'fulfillment_unavailable';
  return undefined;
}

export async function priceTable(em: EntityManager, productIds: string[]): Promise<Map<string, Map<number, Cents>>> {
  const rows = await em.find(ProductPriceSchema, { productId: { $in: productIds } });
  const table = new Map<string, Map<number, Cents>>();
  for (const r of rows) {
    if (!table.has(r.productId)) table.set(r.productId, new Map());
    table.get(r.productId)!.set(r.level, fromDb(r.price));
  }
  return table;
}

export function priceAt(prices: Map<number, Cents> | undefined, level: number): Cents {
  const price = prices?.get(level) ?? prices?.get(1);
  if (price === undefined) throw new ApiError('fulfillment_unavailable', 'No price is set for this product');
  return price;
}

function view(
  product: Product,
  level: number,
  prices: Map<number, Cents> | undefined,
  sellable: number,
  cap: number,
): ProductView {
  const blocked = listingBlock(product) !== undefined;
  return {
    id: product.id,
    slug: product.slug,
    name: product.name,
    nameEn: product.nameEn ?? null,
    price: toDecimal(priceAt(prices, level)),
    retailPrice: toDecimal(priceAt(prices, 1)),
    currency: product.currency,
    fulfillmentMode: product.fulfillmentMode,
    deliveryType: product.deliveryType,
    productGroupId: product.productGroupId ?? null,
    denomination: product.denomination ?? null,
    faceCurrency: product.faceCurrency ?? null,
    region: product.region ?? null,
    inStock: product.inStock,
    available: !blocked && sellable >= 1,
    stockMode: product.stockMode,
    stock: product.stockMode === 'inventory' ? Math.min(sellable, cap) : null,
    stockCapped: product.stockMode === 'inventory' && sellable > cap,
    availabilityStatus: product.availabilityStatus,
    deliveryMode: product.deliveryMode,
    redeemFields: product.deliveryType === 'direct_code' ? [] : product.redeemFields,
    redeemFieldsEn: product.deliveryType === 'direct_code' ? [] : product.redeemFieldsEn,
  };
}

async function views(em: EntityManager, products: Product[], level: number, cap: number): Promise<ProductView[]> {
  const [prices, sellable] = await Promise.all([
    priceTable(
      em,
      products.map((p) => p.id),
    ),
    sellableUnits(em, products),
  ]);
  return products.map((p) => view(p, level, prices.get(p.id), sellable.get(p.id) ?? 0, cap));
}

/** The public list: active, listed products (the integration test product is hidden). */
export async function listProducts(em: EntityManager, level: number, cap: number): Promise<ProductView[]> {
  const products = await em.find(
    ProductSchema,
    { active: true, listed: true },
    { orderBy: { sortOrder: 'asc', id: 'asc' } },
  );
  return views(em, products, level, cap);
}

/** An active product by id (the test product included); `not_found` otherwise. */
export async function findActiveProduct(em: EntityManager, id: string): Promise<Product> {
  const product = await em.findOne(ProductSchema, { id, active: true });
  if (!product) throw new ApiError('not_found', `Product ${id} not found`);
  return product;
}

export async function getProduct(em: EntityManager, id: string, level: number, cap: number): Promise<ProductView> {
  const [v] = await views(em, [await findActiveProduct(em, id)], level, cap);
  return v;
}

/**
 * The gift-card value picker of spec 2.1: the rows of a group that are in stock and available,
 * sorted by numeric denomination.
 */
export async function groupPicker(
  em: EntityManager,
  groupId: string,
  level: number,
  cap: number,
): Promise<ProductView[]> {
  const products = await em.find(ProductSchema, { productGroupId: groupId, active: true, listed: true });
  const rows = await views(em, products, level, cap);
  return rows
    .filter((r) => r.inStock && r.available)
    .sort((a, b) => Number(a.denomination ?? 0) - Number(b.denomination ?? 0));
}

export async function checkAvailability(
  em: EntityManager,
  id: string,
  qty: number,
  level: number,
): Promise<AvailabilityView> {
  const product = await findActiveProduct(em, id);
  const [prices, sellable] = await Promise.all([priceTable(em, [id]), sellableUnits(em, [product])]);
  const testQtyOk = !product.isTest || qty === 1;
  return {
    productId: product.id,
    qty,
    available: listingBlock(product) === undefined && (sellable.get(id) ?? 0) >= qty && testQtyOk,
    stockMode: product.stockMode,
    productGroupId: product.productGroupId ?? null,
    denomination: product.denomination ?? null,
    faceCurrency: product.faceCurrency ?? null,
    region: product.region ?? null,
    deliveryType: product.deliveryType,
    unitPrice: toDecimal(priceAt(prices.get(id), level)),
    checkedAt: Math.floor(Date.now() / 1000),
    availabilityStatus: product.availabilityStatus,
    deliveryMode: product.deliveryMode,
  };
}

/** The whole catalog as the operator's `products list` shows it: flags, supplier and the price at each level. */
export async function productsWithSuppliers(em: EntityManager) {
  const products = await em.find(ProductSchema, {}, { orderBy: { sortOrder: 'asc' } });
  const prices = await em.find(ProductPriceSchema, {});
  const suppliers = new Map(
    (
      await productCostRows(
        em,
        products.map((p) => p.id),
      )
    ).map((r) => [r.id, r]),
  );
  return products.map((p) => ({
    id: p.id,
    name: p.nameEn ?? p.name,
    deliveryType: p.deliveryType,
    stockMode: p.stockMode,
    inStock: p.inStock,
    listed: p.listed,
    active: p.active,
    productGroupId: p.productGroupId ?? null,
    denomination: p.denomination ?? null,
    supplier: suppliers.get(p.id)?.supplier ?? null,
    supplierProductId: suppliers.get(p.id)?.supplier_product_id ?? null,
    prices: Object.fromEntries(
      prices.filter((r) => r.productId === p.id).map((r) => [`Lv${r.level}`, toDecimal(fromDb(r.price))]),
    ),
  }));
}
