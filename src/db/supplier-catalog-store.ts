import type { EntityManager } from '@mikro-orm/postgresql';

// Which supplier serves each direct-code product, and under which of its product ids
// (products.supplier, products.supplier_product_id), and the prices a supplier's cost is held
// against.

export interface SupplierMapping {
  productId: string;
  supplier: string | null;
  supplierProductId: string | null;
}

export async function directCodeProductIds(em: EntityManager): Promise<string[]> {
  const rows = await em.execute<{ id: string }[]>(
    `select id from products where delivery_type = 'direct_code' order by id`,
  );
  return rows.map((r) => r.id);
}

/**
 * Writes the mapping of every direct-code product in one statement: a product left out has no
 * supplier. Returns the ids whose mapping changed.
 */
export async function writeSupplierMappings(em: EntityManager, mappings: SupplierMapping[]): Promise<string[]> {
  const rows = await em.execute<{ id: string }[]>(
    `update products p set supplier = m.supplier, supplier_product_id = m.supplier_product_id
       from (select d.id, x.supplier, x.supplier_product_id
               from products d
               left join jsonb_to_recordset(?::jsonb) as x(product_id text, supplier text, supplier_product_id text) on x.product_id = d.id
              where d.delivery_type = 'direct_code') m
      where p.id = m.id
        and (p.supplier is distinct from m.supplier or p.supplier_product_id is distinct from m.supplier_product_id)
      returning p.id`,
    [
      JSON.stringify(
        mappings.map((m) => ({
          product_id: m.productId,
          supplier: m.supplier,
          supplier_product_id: m.supplierProductId,
        })),
      ),
    ],
  );
  return rows.map((r) => r.id).sort();
}

export interface ProductCostRow {
  id: string;
  name: string;
  currency: string;
  supplier: string | null;
  supplier_product_id: string | null;
  /** The Lv1 (list) price, a Decimal string in `currency`; null when the product has none. */
  lv1_price: string | null;
}

/** The products' names, currencies, supplier mappings and Lv1 prices. */
export async function productCostRows(em: EntityManager, productIds: string[]): Promise<ProductCostRow[]> {
  if (productIds.length === 0) return [];
  return em.execute<ProductCostRow[]>(
    `select p.id, coalesce(p.name_en, p.name) as name, p.currency, p.supplier, p.supplier_product_id, pp.price as lv1_price
       from products p left join product_prices pp on pp.product_id = p.id and pp.level = 1
      where p.id in (${productIds.map(() => '?').join(',')})
      order by p.id`,
    productIds,
  );
}
