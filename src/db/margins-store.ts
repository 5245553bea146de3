import type { EntityManager } from '@mikro-orm/postgresql';

// The numbers of the margin report: purchase orders paid in [from, to), by product, with what
// resellers paid for them net of refunds, and what the supplier charged for them. Sums are made
// by Postgres on numeric columns, so they are exact.

export interface MarginRevenueRow {
  product_id: string;
  currency: string;
  orders: string;
  refunded_orders: string;
  open_orders: string;
  units: string;
  revenue: string;
}

/**
 * Per product and currency: the orders paid in the period, how many were refunded and how many
 * are still being procured, the units resellers kept (a refunded order keeps its delivered units
 * only), and the revenue: what was paid (orders.amount, by balance or at a hosted checkout) less
 * every refund of the order in the ledger.
 */
export async function marginRevenue(em: EntityManager, from: Date, to: Date): Promise<MarginRevenueRow[]> {
  return em.execute<MarginRevenueRow[]>(
    `select o.product_id, o.currency,
            count(*) as orders,
            count(*) filter (where o.status = 'refunded') as refunded_orders,
            count(*) filter (where o.status = 'paid') as open_orders,
            sum(case when o.status = 'refunded' then o.fulfilled_quantity else o.qty end) as units,
            sum(o.amount - coalesce(r.refunded, 0)) as revenue
       from orders o
       left join lateral (select sum(l.amount) as refunded from ledger_transactions l where l.order_id = o.id and l.type = 'refund') r on true
      where o.kind = 'purchase' and o.paid_at >= ? and o.paid_at < ?
      group by o.product_id, o.currency
      order by o.product_id, o.currency`,
    [from, to],
  );
}

export interface MarginCostRow {
  product_id: string;
  /** The orders' currency (the revenue's). */
  currency: string;
  /** The supplier's currency; null when it did not say. */
  cost_currency: string | null;
  purchases: string;
  units: string;
  /** Sum of the purchases' total cost; null when none of them told it. */
  cost: string | null;
  /** Completed purchases whose cost the supplier did not tell. */
  unpriced: string;
}

/** Per product, order currency and supplier currency: the completed purchases of the orders paid in the period. */
export async function marginCosts(em: EntityManager, from: Date, to: Date): Promise<MarginCostRow[]> {
  return em.execute<MarginCostRow[]>(
    `select o.product_id, o.currency, sp.currency as cost_currency,
            count(*) as purchases,
            sum(sp.units) as units,
            sum(sp.total_cost) as cost,
            count(*) filter (where sp.total_cost is null) as unpriced
       from orders o
       join supplier_purchases sp on sp.order_id = o.id and sp.state = 'completed'
      where o.kind = 'purchase' and o.paid_at >= ? and o.paid_at < ?
      group by o.product_id, o.currency, sp.currency
      order by o.product_id, o.currency, sp.currency nulls last`,
    [from, to],
  );
}
