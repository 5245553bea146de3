import type { EntityManager } from '@mikro-orm/postgresql';
import type { Order } from './entities/all-entities';
import { hitCounterSql } from './rate-limits-store';

// Orders and the codes issued to them: row locks, conditional state changes and bulk code
// inserts that the entity API cannot say in one statement.

/** Locks the order row for the rest of the caller's transaction. */
export async function lockOrderRow(em: EntityManager, orderId: string): Promise<void> {
  await em.execute('select id from orders where id = ? for update', [orderId]);
}

/** pending → expired; returns the new status, or undefined when the order was not pending. */
export async function expireIfPending(em: EntityManager, orderId: string): Promise<Order['status'] | undefined> {
  const rows = await em.execute<{ status: Order['status'] }[]>(
    `update orders set status = 'expired', updated_at = now(),
       fulfillment_status = case when fulfillment_status is not null then 'expired' else null end
     where id = ? and status = 'pending' returning status`,
    [orderId],
  );
  return rows[0]?.status;
}

/** Drops the checkout link of the pending order paid through this checkout. */
export async function clearCheckoutUrl(em: EntityManager, checkoutId: string): Promise<void> {
  await em.execute(
    `update orders set checkout_url = null, updated_at = now() where checkout_id = ? and status = 'pending'`,
    [checkoutId],
  );
}

/** Gives a pending order without a link this checkout; false when it is not such an order. */
export async function attachCheckoutRow(
  em: EntityManager,
  orderId: string,
  checkout: { checkoutId: string; checkoutUrl: string },
): Promise<boolean> {
  const rows = await em.execute(
    `update orders set checkout_id = ?, checkout_url = ?, updated_at = now() where id = ? and status = 'pending' and checkout_url is null returning id`,
    [checkout.checkoutId, checkout.checkoutUrl, orderId],
  );
  return rows.length > 0;
}

export async function countPendingTopups(em: EntityManager, accountId: string): Promise<number> {
  const [row] = await em.execute<{ n: string }[]>(
    `select count(*) as n from orders where account_id = ? and kind = 'topup' and status = 'pending'`,
    [accountId],
  );
  return Number(row.n);
}

/**
 * What a top-up request checks before its workflow, in one statement: one hit of `bucket` in the
 * window starting at `windowStart` (the hourly quota, replays included), the top-up already under
 * this externalTopupId (its columns, for `em.map`), and the account's unpaid top-ups.
 */
export async function topupChecks(
  em: EntityManager,
  q: { bucket: string; windowStart: Date; accountId: string; externalTopupId: string | null },
): Promise<{ hits: number; pending: number; existing: Record<string, unknown> | undefined }> {
  const [row] = await em.execute<Record<string, unknown>[]>(
    `with hit as (${hitCounterSql('(select 1) one', '?::text')})
     select (select count from hit) as "q$hits",
            (select count(*) from orders p where p.account_id = ? and p.kind = 'topup' and p.status = 'pending') as "q$pending",
            o.*
       from (select 1) one
       left join orders o on o.account_id = ? and o.external_topup_id = ? and o.kind = 'topup'`,
    [q.bucket, q.windowStart, q.accountId, q.accountId, q.externalTopupId],
  );
  const { ['q$hits']: hits, ['q$pending']: pending, ...columns } = row;
  return { hits: Number(hits), pending: Number(pending), existing: columns.id == null ? undefined : columns };
}

/** Inserts platform codes of an order, skipping any that already exist; returns the ones inserted. */
export async function insertPlatformCodes(
  em: EntityManager,
  order: Pick<Order, 'id' | 'accountId'>,
  product: { id: string; isTest: boolean },
  codes: string[],
): Promise<string[]> {
  const values = codes.map(() => '(?, ?, ?, ?, ?, ?)').join(', ');
  const params = codes.flatMap((code) => [order.id, order.accountId, product.id, code, 'platform', product.isTest]);
  const rows = await em.execute<{ code: string }[]>(
    `insert into issued_codes (order_id, account_id, product_id, code, kind, is_test) values ${values}
     on conflict (code) do nothing returning code`,
    params,
  );
  return rows.map((r) => r.code);
}

/**
 * A purchase order's columns (as `orders` stores them, for `em.map`) with its codes (voided ones
 * aside, oldest first), by id or by the reseller's externalOrderId, in one statement.
 */
export async function purchaseWithCodes(
  em: EntityManager,
  where: { id: string } | { accountId: string; externalOrderId: string },
): Promise<{ columns: Record<string, unknown>; codes: string[] } | undefined> {
  const [filter, params] =
    'id' in where
      ? ['o.id = ?', [where.id]]
      : [
          "o.account_id = ? and o.external_order_id = ? and o.kind = 'purchase'",
          [where.accountId, where.externalOrderId],
        ];
  const [row] = await em.execute<Record<string, unknown>[]>(
    `select o.*, (select coalesce(json_agg(c.code order by c.id), '[]'::json) from issued_codes c where c.order_id = o.id and c.voided = false) as "c$codes"
       from orders o where ${filter}`,
    params,
  );
  if (!row) return undefined;
  const { ['c$codes']: codes, ...columns } = row;
  return { columns, codes: codes as string[] };
}

/**
 * What an order's create response shows that travels through Temporal only sealed: its checkout
 * link and its codes (voided ones aside, oldest first), in one statement, for an answer without a
 * seal the API can open.
 */
export async function checkoutAndCodes(
  em: EntityManager,
  orderId: string,
): Promise<{ checkoutUrl: string | null; codes: string[] } | undefined> {
  const [row] = await em.execute<{ checkout_url: string | null; codes: string[] }[]>(
    `select o.checkout_url, (select coalesce(json_agg(c.code order by c.id), '[]'::json) from issued_codes c where c.order_id = o.id and c.voided = false) as codes
       from orders o where o.id = ?`,
    [orderId],
  );
  return row && { checkoutUrl: row.checkout_url, codes: row.codes };
}

/** Orders (either kind) whose id or reseller's id (externalOrderId, externalTopupId) is `term`, newest first. */
export async function ordersByAnyId(em: EntityManager, term: string, limit: number) {
  return em.execute<{ id: string; account_id: string; external: string | null; status: string; kind: string }[]>(
    `select id, account_id, coalesce(external_order_id, external_topup_id) as external, status, kind
       from orders where id = ? or external_order_id = ? or external_topup_id = ? order by created_at desc limit ?`,
    [term, term, term, limit],
  );
}
