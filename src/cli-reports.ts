// `npx wholesale report margins --from YYYY-MM-DD --to YYYY-MM-DD [--json]`: the margin report
// (src/services/supply/margins.ts, also GET /admin/v1/reports/margins), as a table for people or as JSON.
import type { Config } from './config';
import type { Orm } from './db/orm';
import { ApiError } from './domain/errors';
import { marginReport, type MarginReport, type SupplierCost } from './services/supply/margins';

export const REPORT_USAGE = `  report margins --from YYYY-MM-DD --to YYYY-MM-DD [--json]
                                                      revenue, supplier cost and margin by product for the purchase
                                                      orders paid in [from, to) (UTC days); a table, or JSON`;

/** The parseArgs options these commands read. */
export const REPORT_OPTIONS = { from: { type: 'string' }, to: { type: 'string' }, json: { type: 'boolean' } } as const;

/** Output printed as it is, not as JSON. */
export class PlainText {
  constructor(readonly text: string) {}
}

type ReportCommand = (ctx: {
  orm: Orm;
  config: Config;
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}) => Promise<unknown>;

const costText = (costs: SupplierCost[]) =>
  costs.length === 0
    ? '-'
    : costs
        .map((c) => `${c.amount ?? '?'} ${c.currency ?? '?'}${c.unpriced ? ` (+${c.unpriced} unpriced)` : ''}`)
        .join(' + ');

/** The report as a table: one line per product, then one per revenue currency. */
export function marginTable(r: MarginReport): string {
  const head = ['product', 'supplier', 'orders', 'refunded', 'open', 'units', 'revenue', 'supplier cost', 'margin'];
  const rows = r.products.map((p) => [
    p.productId,
    p.supplier ? `${p.supplier}:${p.supplierProductId ?? '?'}` : '-',
    String(p.orders),
    String(p.refundedOrders),
    String(p.openOrders),
    String(p.units),
    `${p.revenue} ${p.currency}`,
    costText(p.supplierCost),
    p.margin === null ? 'unknown' : `${p.margin} ${p.currency}`,
  ]);
  const totals = r.totals.map((t) => [
    `total ${t.currency}`,
    '',
    String(t.orders),
    '',
    '',
    String(t.units),
    `${t.revenue} ${t.currency}`,
    costText(t.supplierCost),
    t.margin === null ? 'unknown' : `${t.margin} ${t.currency}`,
  ]);
  const all = [head, ...rows, ...totals];
  const widths = head.map((_, i) => Math.max(...all.map((row) => row[i].length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const par = r.costAtPar.length ? `costs counted at par: ${r.costAtPar.join(', ')}` : 'no currencies counted at par';
  return (
    [
      `Margins of the purchase orders paid from ${r.from} to ${r.to} (UTC, ${r.to} excluded); ${par}`,
      line(head),
      ...rows.map(line),
      ...(rows.length ? totals.map(line) : ['(no orders paid in this period)']),
    ].join('\n') + '\n'
  );
}

export const reportCommands: Record<string, ReportCommand> = {
  'report margins': async ({ orm, config, values }) => {
    const { from, to } = values;
    if (typeof from !== 'string' || typeof to !== 'string')
      throw new ApiError('invalid_input', 'usage: report margins --from YYYY-MM-DD --to YYYY-MM-DD [--json]');
    const report = await marginReport(orm.em.fork(), { from, to }, config.SUPPLIER_COST_AT_PAR);
    return values.json ? report : new PlainText(marginTable(report));
  },
};
