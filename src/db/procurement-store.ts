import type { EntityManager } from '@mikro-orm/postgresql';
import type { SupplierPurchase } from '../domain/supplier-purchase';
import type { Order } from './entities/all-entities';

// Procurement's queries: what each direct-code order bought from a real supplier
// (supplier_purchases: one row per purchase, keyed by our idempotency key, with the supplier's
// transaction id and what it cost), and the gift card codes it stored for the order.

/**
 * `open`: the purchase exists or may exist at the supplier and has not ended (ask again under its
 * key); `completed`: its cards came; `failed`: the supplier's transaction ended without cards;
 * `refused`: the supplier refused a purchase that was open, so nothing was bought under its key.
 */
export type SupplierPurchaseState = 'open' | 'completed' | 'failed' | 'refused';

export interface SupplierPurchaseRow {
  idempotency_key: string;
  supplier: string;
  supplier_product_id: string | null;
  state: SupplierPurchaseState;
  transaction_id: string | null;
  supplier_status: string | null;
  requested: number;
  quantity: number | null;
  units: number;
  unit_cost: string | null;
  total_cost: string | null;
  currency: string | null;
  face_value: string | null;
  face_currency: string | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * What a procurement round starts from, in one statement: how many codes the order holds, and the
 * key of the purchase it may still have at the supplier, if any.
 */
export async function roundStart(em: EntityManager, orderId: string): Promise<{ held: number; openKey?: string }> {
  const [row] = await em.execute<{ held: number; open_key: string | null }[]>(
    `select (select count(*)::int from issued_codes where order_id = ? and voided = false) as held,
            (select idempotency_key from supplier_purchases where order_id = ? and state = 'open' order by id limit 1) as open_key`,
    [orderId, orderId],
  );
  return { held: row.held, ...(row.open_key === null ? {} : { openKey: row.open_key }) };
}

/**
 * Records what is known of the purchase under `idempotencyKey` now. A purchase that completed
 * stays completed, and what an earlier answer told (its transaction id, its cost) is kept where
 * this one does not tell it.
 */
export async function recordSupplierPurchase(
  em: EntityManager,
  p: {
    orderId: string;
    idempotencyKey: string;
    supplier: string;
    state: SupplierPurchaseState;
    requested: number;
    units: number;
    purchase?: SupplierPurchase;
    error: string | null;
  },
): Promise<void> {
  const b = p.purchase;
  await em.execute(
    `insert into supplier_purchases as sp (order_id, idempotency_key, supplier, supplier_product_id, state, transaction_id, supplier_status,
         requested, quantity, units, unit_cost, total_cost, currency, face_value, face_currency, error)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (idempotency_key) do update set
         state = excluded.state,
         supplier_product_id = coalesce(excluded.supplier_product_id, sp.supplier_product_id),
         transaction_id = coalesce(excluded.transaction_id, sp.transaction_id),
         supplier_status = coalesce(excluded.supplier_status, sp.supplier_status),
         quantity = coalesce(excluded.quantity, sp.quantity),
         units = greatest(excluded.units, sp.units),
         unit_cost = coalesce(excluded.unit_cost, sp.unit_cost),
         total_cost = coalesce(excluded.total_cost, sp.total_cost),
         currency = coalesce(excluded.currency, sp.currency),
         face_value = coalesce(excluded.face_value, sp.face_value),
         face_currency = coalesce(excluded.face_currency, sp.face_currency),
         error = excluded.error,
         updated_at = now()
       where sp.state <> 'completed'`,
    [
      p.orderId,
      p.idempotencyKey,
      b?.supplier ?? p.supplier,
      b?.supplierProductId ?? null,
      p.state,
      b?.transactionId ?? null,
      b?.supplierStatus ?? null,
      p.requested,
      b?.quantity ?? null,
      p.units,
      b?.unitCost ?? null,
      b?.totalCost ?? null,
      b?.currency ?? null,
      b?.faceValue ?? null,
      b?.faceCurrency ?? null,
      p.error,
    ],
  );
}

/** Every purchase of an order, oldest first. */
export async function supplierPurchasesOf(em: EntityManager, orderId: string): Promise<SupplierPurchaseRow[]> {
  return em.execute<SupplierPurchaseRow[]>(
    `select idempotency_key, supplier, supplier_product_id, state, transaction_id, supplier_status, requested, quantity, units,
            unit_cost, total_cost, currency, face_value, face_currency, error, created_at, updated_at
       from supplier_purchases where order_id = ? order by id`,
    [orderId],
  );
}

/**
 * Inserts gift-card codes of an order, skipping any that already exist; returns the ones
 * inserted. A driver error quotes the codes: callers wrap this in `withCodes`.
 */
export async function insertGiftCardCodes(
  em: EntityManager,
  order: Pick<Order, 'id' | 'accountId' | 'productId'>,
  codes: string[],
): Promise<string[]> {
  const rows = await em.execute<{ code: string }[]>(
    `insert into issued_codes (order_id, account_id, product_id, code, kind, is_test)
       values ${codes.map(() => "(?, ?, ?, ?, 'gift_card', false)").join(', ')}
       on conflict (code) do nothing returning code`,
    codes.flatMap((code) => [order.id, order.accountId, order.productId, code]),
  );
  return rows.map((r) => r.code);
}

/** The codes stored for an order so far (voided ones aside), oldest first. */
export async function orderCodes(em: EntityManager, orderId: string): Promise<string[]> {
  const rows = await em.execute<{ code: string }[]>(
    'select code from issued_codes where order_id = ? and voided = false order by id',
    [orderId],
  );
  return rows.map((r) => r.code);
}

/** How many of these codes were issued already, to any order. */
export async function countIssuedCodes(em: EntityManager, codes: string[]): Promise<number> {
  const [row] = await em.execute<{ n: string }[]>(
    `select count(*) as n from issued_codes where code in (${codes.map(() => '?').join(', ')})`,
    codes,
  );
  return Number(row.n);
}
