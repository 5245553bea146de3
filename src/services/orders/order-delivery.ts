import type { EntityManager } from '@mikro-orm/postgresql';
import { generateCode } from '../../codes';
import { decrementLimitedRemaining, takeStockCodes } from '../../db/catalog-store';
import type { Order, Product } from '../../db/entities/all-entities';
import { insertPlatformCodes } from '../../db/orders-store';
import { ApiError } from '../../domain/errors';
import { recordEvent } from '../webhooks/events';
import { redeemUrlFor } from './orders';

// An order's delivery: a paid order takes its stock and gets its codes (or goes to procurement),
// and every delivery, from stock or from a supplier, puts `order.delivered` in the outbox in the
// transaction that delivers it. Run by the payment's activity and by procurement.

/**
 * A paid order takes its stock and is delivered (ordinary products, codes issued now) or handed
 * to procurement (`paid`, fulfillmentStatus `processing`, direct-code products).
 */
export async function fulfilPaidOrder(
  em: EntityManager,
  order: Order,
  product: Product,
  baseUrl: string,
): Promise<void> {
  const now = new Date();
  order.paidAt = now;
  order.updatedAt = now;
  if (product.stockMode === 'limited') {
    await decrementLimitedRemaining(em, product.id, order.qty);
  }
  if (product.deliveryType === 'direct_code') {
    order.status = 'paid';
    order.fulfillmentStatus = 'processing';
    await em.flush();
    return;
  }
  const codes = await issueCodes(em, order, product);
  order.status = 'delivered';
  order.deliveredAt = now;
  order.fulfilledQuantity = order.qty;
  await em.flush();
  await recordDelivered(em, order, codes, baseUrl);
}

/** Issues the codes of a delivered order: imported stock for inventory products, new platform codes otherwise. */
async function issueCodes(em: EntityManager, order: Order, product: Product): Promise<string[]> {
  if (product.deliveryType === 'direct_code') return [];
  if (product.stockMode === 'inventory') {
    const rows = await takeStockCodes(em, order.id, product.id, order.qty);
    if (rows.length !== order.qty) throw new ApiError('insufficient_stock', 'Stock changed while placing the order');
    const codes = rows.map((r) => r.code);
    if ((await insertPlatformCodes(em, order, product, codes)).length !== codes.length) {
      throw new ApiError(
        'stock_unavailable',
        'Imported stock holds a code that was already issued; support has to check the stock',
      );
    }
    return codes;
  }
  const codes: string[] = [];
  while (codes.length < order.qty) {
    const batch = Array.from({ length: order.qty - codes.length }, generateCode);
    codes.push(...(await insertPlatformCodes(em, order, product, batch)));
  }
  return codes;
}

/** `order.delivered` goes into the outbox in the same transaction as the delivery. */
export async function recordDelivered(
  em: EntityManager,
  order: Order,
  codes: string[],
  baseUrl: string,
): Promise<void> {
  await recordEvent(em, order.accountId, 'order.delivered', {
    orderId: order.id,
    externalOrderId: order.externalOrderId ?? null,
    productId: order.productId,
    qty: order.qty,
    codes,
    redeemUrl: redeemUrlFor(baseUrl, order.deliveryType),
    deliveryType: order.deliveryType,
  });
}
