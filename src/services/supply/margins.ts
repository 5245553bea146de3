import type { EntityManager } from '@mikro-orm/postgresql';
import { marginCosts, marginRevenue, type MarginCostRow } from '../../db/margins-store';
import { productCostRows } from '../../db/supplier-catalog-store';
import { ApiError } from '../../domain/errors';
import { fromMicros, toMicros } from '../../domain/micros';
import { comparableCurrency, type CostAtPar } from './supplier-costs';

// The margin report ("what each product costs us"), shared by the admin API and
// `npx wholesale report margins`: for the purchase orders paid in [from, to) (UTC days), by
// product, what resellers paid net of refunds, what the supplier charged for those orders'
// completed purchases, and the difference. An order's cost counts with the order, in the period
// it was paid in, whenever the supplier was paid. Costs in different currencies are never added
// together; a cost counts against revenue in another currency only at par (SUPPLIER_COST_AT_PAR).

const DAY = /^\d{4}-\d{2}-\d{2}$/;

export interface MarginPeriod {
  /** First day covered (UTC), YYYY-MM-DD. */
  from: string;
  /** First day not covered (UTC), YYYY-MM-DD. */
  to: string;
}

function dayStart(day: string, name: string): Date {
  const d = new Date(`${day}T00:00:00Z`);
  if (!DAY.test(day) || Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== day) {
    throw new ApiError('invalid_input', `${name} must be a date, YYYY-MM-DD`);
  }
  return d;
}

export interface SupplierCost {
  /** The supplier's currency; null when a purchase did not say. */
  currency: string | null;
  /** Completed purchases, and the cards they brought. */
  purchases: number;
  units: number;
  /** What they cost, six places; null when none said. */
  amount: string | null;
  /** Completed purchases whose cost the supplier did not tell (the margin is then unknown). */
  unpriced: number;
}

export interface ProductMargin {
  productId: string;
  productName: string | null;
  /** Who serves it and under which id, as the catalog says now. */
  supplier: string | null;
  supplierProductId: string | null;
  /** The revenue's currency. */
  currency: string;
  orders: number;
  refundedOrders: number;
  /** Paid and still being procured: their revenue may yet be refunded. */
  openOrders: number;
  /** Units resellers kept. */
  units: number;
  /** What resellers paid, less refunds, two places. */
  revenue: string;
  supplierCost: SupplierCost[];
  /** Revenue less supplier cost, six places, in `currency`; null when a cost cannot be counted in it. */
  margin: string | null;
}

export interface MarginTotal {
  currency: string;
  orders: number;
  units: number;
  revenue: string;
  supplierCost: SupplierCost[];
  margin: string | null;
}

export interface MarginReport extends MarginPeriod {
  /** Pairs of currencies counted 1:1 (`USD=USDT`), as configured. */
  costAtPar: string[];
  products: ProductMargin[];
  /** By revenue currency. */
  totals: MarginTotal[];
}

const costOf = (r: MarginCostRow): SupplierCost => ({
  currency: r.cost_currency,
  purchases: Number(r.purchases),
  units: Number(r.units),
  amount: r.cost === null ? null : fromMicros(toMicros(r.cost)),
  unpriced: Number(r.unpriced),
});

/** Revenue less costs, when every cost is known and may be counted in the revenue's currency. */
function marginOf(revenue: bigint, currency: string, costs: SupplierCost[], par: CostAtPar): bigint | null {
  let margin = revenue;
  for (const c of costs) {
    if (c.unpriced > 0 || c.amount === null || c.currency === null || !comparableCurrency(c.currency, currency, par))
      return null;
    margin -= toMicros(c.amount);
  }
  return margin;
}

/** Adds costs of the same currency together (and never of different ones). */
function addCosts(into: SupplierCost[], more: SupplierCost[]): void {
  for (const c of more) {
    const same = into.find((t) => t.currency === c.currency);
    if (!same) {
      into.push({ ...c });
      continue;
    }
    same.purchases += c.purchases;
    same.units += c.units;
    same.unpriced += c.unpriced;
    same.amount =
      same.amount === null
        ? c.amount
        : c.amount === null
          ? same.amount
          : fromMicros(toMicros(same.amount) + toMicros(c.amount));
  }
}

export async function marginReport(em: EntityManager, period: MarginPeriod, par: CostAtPar): Promise<MarginReport> {
  const from = dayStart(period.from, 'from');
  const to = dayStart(period.to, 'to');
  if (to <= from) throw new ApiError('invalid_input', 'to must be after from (the period is [from, to))');
  const [revenue, costs] = await Promise.all([marginRevenue(em, from, to), marginCosts(em, from, to)]);
  const catalog = new Map(
    (await productCostRows(em, [...new Set(revenue.map((r) => r.product_id))])).map((p) => [p.id, p]),
  );

  const totals = new Map<string, MarginTotal & { micros: bigint | null }>();
  const products = revenue.map((r): ProductMargin => {
    const product = catalog.get(r.product_id);
    const supplierCost = costs.filter((c) => c.product_id === r.product_id && c.currency === r.currency).map(costOf);
    const revenueMicros = toMicros(r.revenue);
    const margin = marginOf(revenueMicros, r.currency, supplierCost, par);
    const total = totals.get(r.currency) ?? {
      currency: r.currency,
      orders: 0,
      units: 0,
      revenue: '0.00',
      supplierCost: [],
      margin: null,
      micros: 0n,
    };
    total.orders += Number(r.orders);
    total.units += Number(r.units);
    total.revenue = fromMicros(toMicros(total.revenue) + revenueMicros, 2);
    addCosts(total.supplierCost, supplierCost);
    total.micros = total.micros === null || margin === null ? null : total.micros + margin;
    totals.set(r.currency, total);
    return {
      productId: r.product_id,
      productName: product?.name ?? null,
      supplier: product?.supplier ?? null,
      supplierProductId: product?.supplier_product_id ?? null,
      currency: r.currency,
      orders: Number(r.orders),
      refundedOrders: Number(r.refunded_orders),
      openOrders: Number(r.open_orders),
      units: Number(r.units),
      revenue: fromMicros(revenueMicros, 2),
      supplierCost,
      margin: margin === null ? null : fromMicros(margin),
    };
  });
  return {
    from: period.from,
    to: period.to,
    costAtPar: par.map(([a, b]) => `${a}=${b}`),
    products,
    totals: [...totals.values()].map(({ micros, ...t }) => ({
      ...t,
      margin: micros === null ? null : fromMicros(micros),
    })),
  };
}
