import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { checkAvailability, getProduct, listProducts } from '../../services/supply/catalog';
import type { AppContext } from '../context';
import { z } from '../openapi';
import { IdString } from '../hygiene';
import { addRoute } from '../route';
import { Availability, Balance, Product, Qty } from '../schemas';
import { getBalance } from '../../services/payments/ledger';

const ProductParams = z.object({ id: IdString(128) });

export function catalogRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  const cap = ctx.config.STOCK_DISPLAY_CAP;

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/products',
      operationId: 'listProducts',
      tag: 'Catalog',
      summary: "List products at the caller's level price",
      response: z.object({ products: z.array(Product) }),
    },
    async ({ principal }) => ({ products: await listProducts(ctx.orm.em.fork(), principal.account.level, cap) }),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/products/:id',
      operationId: 'getProduct',
      tag: 'Catalog',
      summary: 'One product (the test product is readable by id)',
      params: ProductParams,
      response: Product,
      errors: ['not_found'],
    },
    async ({ params, principal }) => getProduct(ctx.orm.em.fork(), params.id, principal.account.level, cap),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/products/:id/availability',
      operationId: 'checkAvailability',
      tag: 'Catalog',
      summary: 'Real-time availability for a quantity; reserves nothing',
      params: ProductParams,
      query: z.object({ qty: Qty.default(1) }),
      response: Availability,
      errors: ['not_found'],
    },
    async ({ params, query, principal }) =>
      checkAvailability(ctx.orm.em.fork(), params.id, query.qty, principal.account.level),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/balance',
      operationId: 'getBalance',
      tag: 'Balance',
      summary: 'Prepaid balance',
      response: Balance,
    },
    async ({ principal }) => getBalance(ctx.orm.em.fork(), principal.account.id),
  );
}
