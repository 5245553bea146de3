import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { marginReport } from '../../services/supply/margins';
import type { AppContext } from '../context';
import { z } from '../openapi';
import { addRoute } from '../route';
import { Decimal } from '../schemas';

// The margin report's admin route, mounted by the admin router under its token: revenue,
// supplier cost and margin by product for the orders paid in a period (src/services/supply/margins.ts).

const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/)
  .describe('A UTC day, YYYY-MM-DD');
const Cost = z.string().regex(/^-?\d+\.\d{6}$/);

const SupplierCost = z
  .object({
    currency: z.string().nullable().describe("The supplier's currency; null when a purchase did not say"),
    purchases: z.number().int().describe('Completed purchases'),
    units: z.number().int().describe('Cards they brought'),
    amount: Cost.nullable().describe('What they cost, six places'),
    unpriced: z.number().int().describe('Completed purchases whose cost the supplier did not tell'),
  })
  .openapi('SupplierCost');

const ProductMargin = z
  .object({
    productId: z.string(),
    productName: z.string().nullable(),
    supplier: z.string().nullable().describe('Who serves the product, as the catalog says now'),
    supplierProductId: z.string().nullable(),
    currency: z.string().describe("The revenue's currency"),
    orders: z.number().int().describe('Purchase orders paid in the period'),
    refundedOrders: z.number().int(),
    openOrders: z.number().int().describe('Paid and still being procured: their revenue may yet be refunded'),
    units: z.number().int().describe('Units resellers kept (a refunded order keeps its delivered units only)'),
    revenue: Decimal.describe('What resellers paid, less refunds'),
    supplierCost: z.array(SupplierCost).describe('By supplier currency, never added across currencies'),
    margin: Cost.nullable().describe(
      'Revenue less supplier cost in `currency`; null when a cost is unknown or in a currency not counted at par',
    ),
  })
  .openapi('ProductMargin');

const MarginReport = z
  .object({
    from: Day,
    to: Day,
    costAtPar: z.array(z.string()).describe('Currency pairs counted 1:1 (SUPPLIER_COST_AT_PAR), e.g. USD=USDT'),
    products: z.array(ProductMargin),
    totals: z
      .array(
        z.object({
          currency: z.string(),
          orders: z.number().int(),
          units: z.number().int(),
          revenue: Decimal,
          supplierCost: z.array(SupplierCost),
          margin: Cost.nullable(),
        }),
      )
      .describe('By revenue currency'),
  })
  .openapi('MarginReport');

/** Registers the margin report on the admin router (`mount` is its /admin/v1 prefix). */
export function marginRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/reports/margins',
      operationId: 'getMarginReport',
      tag: 'Support',
      auth: 'admin',
      summary: 'Revenue, supplier cost and margin by product for the purchase orders paid in [from, to)',
      description:
        "An order's supplier cost counts with the order, in the period it was paid in. Revenue is what resellers paid less refunds.",
      query: z.object({ from: Day, to: Day }),
      response: MarginReport,
    },
    async ({ query }) => marginReport(ctx.orm.em.fork(), query, ctx.config.SUPPLIER_COST_AT_PAR),
  );
}
