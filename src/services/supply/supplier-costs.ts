import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import {
  directCodeProductIds,
  productCostRows,
  writeSupplierMappings,
  type SupplierMapping,
} from '../../db/supplier-catalog-store';
import { toMicros } from '../../domain/micros';
import { supplierPriceAboveLv1 } from '../../metrics/registry';
import type { SupplierPurchase } from '../../providers/supplier';

// What each direct-code product costs us: which supplier serves it, and whether what
// the supplier charged for it is above our Lv1 price.

/** Pairs of (supplier currency, our currency) whose amounts count 1:1 (SUPPLIER_COST_AT_PAR). */
export type CostAtPar = readonly (readonly [string, string])[];

/** Whether a supplier cost in `cost` may be compared with, and taken from, an amount in `ours`. */
export function comparableCurrency(cost: string, ours: string, par: CostAtPar): boolean {
  return cost === ours || par.some(([from, to]) => from === cost && to === ours);
}

/**
 * Each direct-code product's supplier as the configured supplier buys it: Reloadly's product id
 * from RELOADLY_PRODUCTS (a product it does not map has no supplier), the sandbox's own id, or
 * none.
 */
export function supplierMappings(
  config: Pick<Config, 'SUPPLIER_PROVIDER' | 'reloadlyProducts'>,
  directCodeIds: string[],
): SupplierMapping[] {
  return directCodeIds.map((productId) => {
    if (config.SUPPLIER_PROVIDER === 'sandbox') return { productId, supplier: 'sandbox', supplierProductId: productId };
    const mapped = config.SUPPLIER_PROVIDER === 'reloadly' ? config.reloadlyProducts[productId] : undefined;
    return mapped
      ? { productId, supplier: 'reloadly', supplierProductId: String(mapped.productId) }
      : { productId, supplier: null, supplierProductId: null };
  });
}

/**
 * Writes the supplier mapping into the catalog (at start, and after seeding). The supplier's own
 * settings stay what its adapter buys from; this keeps the catalog saying the same. Returns the
 * products whose mapping changed.
 */
export async function syncSupplierCatalog(
  em: EntityManager,
  config: Pick<Config, 'SUPPLIER_PROVIDER' | 'reloadlyProducts'>,
): Promise<string[]> {
  return writeSupplierMappings(em, supplierMappings(config, await directCodeProductIds(em)));
}

export interface PriceLog {
  warn(message: string, attrs: Record<string, unknown>): void;
}

export type PriceCheck = 'above_lv1' | 'within_lv1' | 'not_comparable' | 'unknown';

/** Products whose costs came in a currency that cannot be compared with their price, already logged. */
const incomparableLogged = new Set<string>();

/**
 * Holds a purchase's unit cost against our Lv1 price for the product. Above it, the gauge
 * `wholesale_supplier_price_above_lv1{product}` is 1 and one warn line says so (ids and prices
 * only); a later purchase at or below it sets the gauge back to 0. The purchase itself is not
 * undone: by the time the supplier tells its price the cards are bought and the reseller has paid.
 */
export async function checkSupplierPrice(
  em: EntityManager,
  productId: string,
  purchase: SupplierPurchase,
  par: CostAtPar,
  log: PriceLog,
): Promise<PriceCheck> {
  if (!purchase.unitCost || !purchase.currency) return 'unknown';
  const [product] = await productCostRows(em, [productId]);
  if (!product?.lv1_price) return 'unknown';
  const ids = {
    productId,
    supplier: purchase.supplier,
    supplierProductId: purchase.supplierProductId,
    transactionId: purchase.transactionId,
  };
  if (!comparableCurrency(purchase.currency, product.currency, par)) {
    const key = `${productId}:${purchase.currency}`;
    if (!incomparableLogged.has(key)) {
      incomparableLogged.add(key);
      log.warn(
        'supplier cost is in a currency our price cannot be compared with (SUPPLIER_COST_AT_PAR); not checked against Lv1',
        {
          ...ids,
          costCurrency: purchase.currency,
          currency: product.currency,
        },
      );
    }
    return 'not_comparable';
  }
  const above = toMicros(purchase.unitCost) > toMicros(product.lv1_price);
  supplierPriceAboveLv1.set({ product: productId }, above ? 1 : 0);
  if (above) {
    log.warn('supplier price above our Lv1 price: this product sells at a loss', {
      ...ids,
      unitCost: purchase.unitCost,
      costCurrency: purchase.currency,
      lv1Price: product.lv1_price,
      currency: product.currency,
    });
  }
  return above ? 'above_lv1' : 'within_lv1';
}
