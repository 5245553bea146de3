import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { isDatabaseUnavailable } from './db-errors';
import { EVENTS_CHANNEL } from './events-store';
import { balanceLowInsert, purchaseLedgerInsert } from './ledger-store';
import { ProductSchema, type Order, type Product } from './entities/all-entities';

// A balance order's placement in two statements: one read of everything its checks need, with no
// row locked, then one write that debits the account only if its balance and level are still
// what was read, and inserts the order, its ledger row, its codes and its event in the same
// statement. The account row is locked from that write to the commit, one round trip, so one
// reseller's concurrent orders wait on each other for that long and no longer.

/** The order already placed under an externalOrderId: what a replay or a conflict needs. */
export type ExistingOrder = Pick<
  Order,
  | 'id'
  | 'productId'
  | 'qty'
  | 'amount'
  | 'currency'
  | 'status'
  | 'payment'
  | 'checkoutUrl'
  | 'placementId'
  | 'fulfillmentStatus'
  | 'deliveryType'
  | 'fulfilledQuantity'
>;

export interface PlacementRead {
  /** Absent: no such account. */
  account?: { level: number; balance: string; cumulativeSpending: string };
  /** The active product, absent when there is none with that id. */
  product?: Product;
  /** Level → price (decimal string). */
  prices: Record<string, string>;
  existing?: ExistingOrder;
}

/** The account, the active product with its prices, and the order under this externalOrderId, in one statement. */
export async function readPlacement(
  em: EntityManager,
  q: { accountId: string; productId: string; externalOrderId: string },
): Promise<PlacementRead> {
  const rows = await em.execute<Record<string, unknown>[]>(
    `select a.level as "a$level", a.balance as "a$balance", a.cumulative_spending as "a$spending",
            (select json_object_agg(pp.level, pp.price::text) from product_prices pp where pp.product_id = p.id) as "pr$prices",
            (select json_build_object('id', o.id, 'productId', o.product_id, 'qty', o.qty, 'amount', o.amount::text, 'currency', o.currency, 'status', o.status, 'payment', o.payment,
                                      'checkoutUrl', o.checkout_url, 'placementId', o.placement_id, 'fulfillmentStatus', o.fulfillment_status,
                                      'deliveryType', o.delivery_type, 'fulfilledQuantity', o.fulfilled_quantity)
               from orders o where o.account_id = a.id and o.external_order_id = ? and o.kind = 'purchase') as "o$existing",
            p.*
       from (select ?::uuid as id) wanted
       left join accounts a on a.id = wanted.id
       left join products p on p.id = ? and p.active`,
    [q.externalOrderId, q.accountId, q.productId],
  );
  const row = rows[0] ?? {};
  const productColumns = Object.fromEntries(Object.entries(row).filter(([k]) => !k.includes('$')));
  return {
    account:
      row['a$level'] == null
        ? undefined
        : {
            level: Number(row['a$level']),
            balance: String(row['a$balance']),
            cumulativeSpending: String(row['a$spending']),
          },
    product: productColumns.id == null ? undefined : em.map(ProductSchema, productColumns),
    prices: (row['pr$prices'] as Record<string, string> | null) ?? {},
    existing: (row['o$existing'] as ExistingOrder | null) ?? undefined,
  };
}

export interface BalanceOrderWrite {
  orderId: string;
  accountId: string;
  /** The level the price was read at: the debit happens only if the account is still there. */
  level: number;
  newLevel: number;
  /** Decimal strings. */
  amount: string;
  unitPrice: string;
  product: Pick<Product, 'id' | 'currency' | 'deliveryType' | 'stockMode' | 'isTest'>;
  qty: number;
  source: string;
  externalOrderId: string;
  placementId: string | null;
  /** Platform codes to issue (on-demand products); inventory products take their stock instead. */
  newCodes: string[];
  /** The `order.delivered` event, its payload without the codes (added from the codes issued). */
  event?: { id: string; payload: Record<string, unknown> };
  /** The id of the `balance.low` event, written if the debit takes the balance below the account's threshold. */
  lowEventId: string;
  /**
   * The statement is its own transaction (no stock to lock): a new code that collides with an
   * issued one fails it whole (`collided`), instead of being skipped for the caller to roll back.
   */
  atomic: boolean;
}

export interface BalanceOrderWritten {
  /** False when the balance or the level was no longer what was read: nothing was written. */
  debited: boolean;
  /** An atomic write whose new codes collided with issued ones: nothing was written. */
  collided?: boolean;
  /** Another placement of this externalOrderId committed first: nothing was written. */
  raced?: boolean;
  /** Imported stock codes taken (inventory products). */
  taken: number;
  /** Codes issued to the order, in issue order. */
  codes: string[];
}

/**
 * Debits the account (if its level is still `level` and its balance covers `amount`) and, only
 * then, inserts the order paid (delivered, or `paid`/`processing` for direct-code products), the
 * ledger row with `balanceAfter`, the stock or platform codes and the `order.delivered` event with
 * its notification, in one statement of the caller's transaction.
 */
export async function writeBalanceOrder(em: EntityManager, w: BalanceOrderWrite): Promise<BalanceOrderWritten> {
  const direct = w.product.deliveryType === 'direct_code';
  const inventory = !direct && w.product.stockMode === 'inventory';
  const params: unknown[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return '?';
  };
  const parts = [
    `debited as (
       update accounts set balance = balance - ${p(w.amount)}::numeric, cumulative_spending = cumulative_spending + ${p(w.amount)}::numeric, level = ${p(w.newLevel)}::int
        where id = ${p(w.accountId)} and level = ${p(w.level)} and balance >= ${p(w.amount)}::numeric
        returning id, balance)`,
    `placed as (
       insert into orders (id, account_id, kind, channel, source, external_order_id, product_id, qty, unit_price, amount, currency, payment,
                           placement_id, status, delivery_type, fulfillment_status, fulfilled_quantity, paid_at, delivered_at, created_at, updated_at)
       select ${p(w.orderId)}, debited.id, 'purchase', 'wholesale_api', ${p(w.source)}, ${p(w.externalOrderId)}, ${p(w.product.id)}, ${p(w.qty)}::int,
              ${p(w.unitPrice)}::numeric, ${p(w.amount)}::numeric, ${p(w.product.currency)}, 'balance', ${p(w.placementId)},
              ${direct ? `'paid', ${p(w.product.deliveryType)}, 'processing', 0, now(), null` : `'delivered', ${p(w.product.deliveryType)}, null, ${p(w.qty)}::int, now(), now()`},
              now(), now()
         from debited
       returning id)`,
    `ledger as (${purchaseLedgerInsert(p(w.amount))})`,
    // Argument order is placeholder order: the event id comes before the amount.
    `low as (${balanceLowInsert({ eventId: p(w.lowEventId), accountId: 'debited.id', balanceAfter: 'debited.balance', amount: `-${p(w.amount)}::numeric`, ledgerType: "'purchase'", orderId: 'placed.id', from: 'debited, placed' })})`,
  ];
  if (w.product.stockMode === 'limited') {
    parts.push(`limited as (
       update products set limited_remaining = greatest(limited_remaining - ${p(w.qty)}::int, 0) where id = ${p(w.product.id)} and exists (select 1 from placed))`);
  }
  if (!direct) {
    if (inventory) {
      parts.push(`taken as (
         update stock_codes set order_id = ${p(w.orderId)}, sold_at = now()
          where id in (select id from stock_codes where product_id = ${p(w.product.id)} and order_id is null order by id limit ${p(w.qty)}::int for update)
            and exists (select 1 from placed)
          returning code)`);
    }
    // Placeholders are numbered in the order p() is called: keep each call where its ? stands.
    const source = () =>
      inventory
        ? `(select code from taken)`
        : `(select value as code from jsonb_array_elements_text(${p(JSON.stringify(w.newCodes))}::jsonb))`;
    parts.push(`issued as (
       insert into issued_codes (order_id, account_id, product_id, code, kind, is_test)
       select placed.id, ${p(w.accountId)}, ${p(w.product.id)}, c.code, 'platform', ${p(w.product.isTest)}::boolean from placed, ${source()} c
       ${w.atomic ? '' : 'on conflict (code) do nothing'}
       returning id, code)`);
    if (w.event) {
      parts.push(`event as (
         insert into events (id, account_id, type, payload)
         select ${p(w.event.id)}, ${p(w.accountId)}, 'order.delivered',
                ${p(JSON.stringify(w.event.payload))}::jsonb || jsonb_build_object('codes', coalesce((select jsonb_agg(code order by id) from issued), '[]'::jsonb))
           from placed
         returning id)`);
    }
  }
  const select = [
    `(select count(*) from debited) as debited`,
    inventory ? `(select count(*) from taken) as taken` : `0 as taken`,
    direct ? `'[]'::json as codes` : `(select coalesce(json_agg(code order by id), '[]'::json) from issued) as codes`,
    ...(w.event && !direct ? [`(select pg_notify('${EVENTS_CHANNEL}', id) from event) as notified`] : []),
    `(select pg_notify('${EVENTS_CHANNEL}', id) from low) as low_notified`,
  ];
  let rows: { debited: string; taken: string | number; codes: string[] }[];
  try {
    rows = await em.execute(`with ${parts.join(',\n')}\nselect ${select.join(', ')}`, params);
  } catch (err) {
    if (
      err instanceof UniqueConstraintViolationException &&
      (err as { constraint?: string }).constraint === 'issued_codes_code_unique'
    ) {
      return { debited: false, collided: true, taken: 0, codes: [] };
    }
    if (
      err instanceof UniqueConstraintViolationException &&
      (err as { constraint?: string }).constraint === 'orders_account_external_order_id_unique'
    ) {
      return { debited: false, raced: true, taken: 0, codes: [] };
    }
    if (isDatabaseUnavailable(err)) throw err;
    // The driver's error quotes the statement with its parameters, the new codes among them.
    const sqlState = (err as { code?: unknown }).code;
    // eslint-disable-next-line preserve-caught-error
    throw new Error(
      `placing order ${w.orderId} failed (${typeof sqlState === 'string' ? `SQLSTATE ${sqlState}` : 'database error'})`,
    );
  }
  const row = rows[0];
  return { debited: Number(row.debited) > 0, taken: Number(row.taken), codes: row.codes };
}

/** The balance and level now (after a write found them changed). */
export async function currentBalanceAndLevel(
  em: EntityManager,
  accountId: string,
): Promise<{ balance: string; level: number } | undefined> {
  const [row] = await em.execute<{ balance: string; level: number }[]>(
    'select balance, level from accounts where id = ?',
    [accountId],
  );
  return row;
}
