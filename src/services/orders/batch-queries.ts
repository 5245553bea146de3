import type { EntityManager } from '@mikro-orm/postgresql';
import type { Order } from '../../db/entities/all-entities';
import {
  findBatch,
  lineCounts,
  linesPage,
  recentBatches,
  type BatchRow,
  type LineCounts,
  type LineRow,
} from '../../db/batches-store';
import { ApiError, type ErrorCode } from '../../domain/errors';
import { fromDb, toDecimal } from '../../domain/money';
import { decodeCursor, pageOf, rowNumberPosition, type CursorScope, type Page } from '../cursor';
import { redeemUrlFor, showsCodes, unixSeconds } from './orders';

// The API's reads of batches: progress, and each line with its outcome, read from Postgres. A
// placed line shows its order as GET /orders/{id} shows it to its owner, codes only once the whole
// order is delivered; a refused one the order API's error code, message and details.

export interface BatchView {
  batchId: string;
  externalBatchId: string;
  status: BatchRow['status'];
  total: number;
  pending: number;
  placed: number;
  rejected: number;
  createdAt: number;
  completedAt: number | null;
}

const view = (row: BatchRow, counts: LineCounts): BatchView => ({
  batchId: row.id,
  externalBatchId: row.external_batch_id,
  status: row.status,
  total: row.total,
  ...counts,
  createdAt: unixSeconds(new Date(row.created_at))!,
  completedAt: unixSeconds(row.completed_at ? new Date(row.completed_at) : null),
});

export async function batchView(em: EntityManager, row: BatchRow): Promise<BatchView> {
  return view(row, await lineCounts(em, row.id));
}

export async function getBatch(em: EntityManager, accountId: string, id: string): Promise<BatchView> {
  const row = await findBatch(em, { id, accountId });
  if (!row) throw new ApiError('not_found', `Batch ${id} not found`);
  return batchView(em, row);
}

export async function listBatches(em: EntityManager, accountId: string, limit = 20): Promise<BatchView[]> {
  return (await recentBatches(em, accountId, limit)).map((r) => view(r, r));
}

function lineView(l: LineRow, baseUrl: string) {
  const order =
    l.order_id && l.order_status
      ? {
          status: l.order_status,
          amount: toDecimal(fromDb(l.order_amount!)),
          deliveryType: l.delivery_type,
          fulfillmentStatus: l.fulfillment_status,
          fulfilledQuantity: l.fulfilled_quantity ?? 0,
          codes: showsCodes({
            status: l.order_status as Order['status'],
            deliveryType: l.delivery_type as Order['deliveryType'],
          })
            ? (l.codes ?? [])
            : [],
          redeemUrl: redeemUrlFor(baseUrl, l.delivery_type),
        }
      : null;
  return {
    line: l.line + 1,
    externalOrderId: l.external_order_id,
    productId: l.product_id,
    qty: l.qty,
    expectedUnitPrice: l.expected_unit_price,
    status: l.status,
    orderId: l.order_id,
    reused: l.reused,
    order,
    rejection:
      l.status === 'rejected'
        ? {
            error: l.error_code as ErrorCode,
            message: l.error_message ?? '',
            ...(l.error_details ? { details: l.error_details } : {}),
          }
        : null,
  };
}

export type BatchLineView = ReturnType<typeof lineView>;

/** A page of a batch's lines in line order (1 is the first line posted). */
export async function listBatchLines(
  em: EntityManager,
  q: { accountId: string; batchId: string; limit: number; cursor?: string; cursorSecret: string; baseUrl: string },
): Promise<Page<BatchLineView>> {
  const batch = await findBatch(em, { id: q.batchId, accountId: q.accountId });
  if (!batch) throw new ApiError('not_found', `Batch ${q.batchId} not found`);
  const scope: CursorScope = {
    secret: q.cursorSecret,
    accountId: q.accountId,
    list: 'batch-lines',
    filters: { b: batch.id },
  };
  const afterLine = q.cursor ? decodeCursor(scope, q.cursor, rowNumberPosition) - 1 : -1;
  const rows = await linesPage(em, batch.id, afterLine, q.limit + 1);
  return pageOf(
    rows,
    q.limit,
    (l) => lineView(l, q.baseUrl),
    (l) => l.line + 1,
    scope,
  );
}
