import type { EntityManager } from '@mikro-orm/postgresql';
import type { ExportKind } from '../../contracts/exports-contract';
import { keyWindow, ledgerRowsPage, ordersPage, type KeyWindow } from '../../db/exports-store';
import { csvRecord, type CsvValue } from '../../domain/csv';
import { ApiError } from '../../domain/errors';
import { fromDb, toDecimal } from '../../domain/money';
import { transactionView } from '../payments/ledger';
import { orderSummary, unixSeconds } from '../orders/orders';

// What an export holds, for both sides: the API streams a small range, the worker writes a large
// one in pages. Columns carry the API's own values (GET /orders/{id} without codes or payment
// link, GET /transactions), rendered by the same views; times are the API's Unix seconds written
// as ISO 8601 UTC, a null an empty field.

export const EXPORT_COLUMNS: Record<ExportKind, readonly string[]> = {
  orders: [
    'id',
    'external_order_id',
    'channel',
    'product_id',
    'order_number',
    'qty',
    'unit_price',
    'amount',
    'currency',
    'status',
    'deliveryType',
    'fulfillmentStatus',
    'fulfilledQuantity',
    'errorCode',
    'resolution',
    'redeemUrl',
    'created_at',
    'paid_at',
  ],
  ledger: ['id', 'type', 'amount', 'balanceAfter', 'order_id', 'note', 'created_at'],
};

/** ISO 8601 UTC, milliseconds only when there are some: `2026-12-01T09:30:00Z`. */
export const isoTime = (d: Date): string => d.toISOString().replace('.000Z', 'Z');

/** The API's Unix second as ISO 8601 UTC. */
export const isoSeconds = (unix: number | null): string | null =>
  unix === null ? null : isoTime(new Date(unix * 1000));

export const exportHeader = (kind: ExportKind) => csvRecord(EXPORT_COLUMNS[kind]);

/** A date range: [from, to), `to` after `from`. */
export interface ExportRange {
  accountId: string;
  from: Date;
  to: Date;
}

/** The keys of the range's rows: how many there are and where the pages start and stop. */
export function exportWindow(em: EntityManager, kind: ExportKind, range: ExportRange): Promise<KeyWindow> {
  if (!(range.from.getTime() < range.to.getTime()))
    throw new ApiError('invalid_input', '`from` must be before `to`', { field: 'to' });
  return keyWindow(em, kind, range.accountId, range.from, range.to);
}

export interface RenderedPage {
  text: string;
  rows: number;
  /** The key to continue after; the window's last key once the range is read. */
  cursor: number;
  done: boolean;
}

/**
 * The CSV records of the next page of the window after `after` (at most `limit` rows), read with
 * one keyset query into no identity map: memory holds one page, whatever the range.
 */
export async function renderPage(
  em: EntityManager,
  kind: ExportKind,
  q: ExportRange & { window: KeyWindow; after: number | null; limit: number; baseUrl: string },
): Promise<RenderedPage> {
  const { firstKey, lastKey } = q.window;
  if (firstKey === null || lastKey === null) return { text: '', rows: 0, cursor: 0, done: true };
  const page = {
    accountId: q.accountId,
    from: q.from,
    to: q.to,
    after: q.after ?? firstKey - 1,
    upTo: lastKey,
    limit: q.limit,
  };
  let records: CsvValue[][];
  let last: number;
  if (kind === 'orders') {
    const orders = await ordersPage(em, page);
    records = orders.map((o) => {
      const s = orderSummary(o, q.baseUrl);
      return [
        s.id,
        s.external_order_id,
        s.channel,
        s.product_id,
        String(o.orderNumber),
        s.qty,
        toDecimal(fromDb(o.unitPrice)),
        s.amount,
        o.currency,
        s.status,
        s.deliveryType,
        s.fulfillmentStatus,
        s.fulfilledQuantity,
        s.errorCode,
        s.resolution,
        s.redeemUrl,
        isoSeconds(unixSeconds(o.createdAt)),
        isoSeconds(unixSeconds(o.paidAt)),
      ];
    });
    last = orders.length ? Number(orders[orders.length - 1].orderNumber) : lastKey;
  } else {
    const rows = await ledgerRowsPage(em, page);
    records = rows.map((r) => {
      const t = transactionView(r);
      return [t.id, t.type, t.amount, t.balanceAfter, t.order_id, t.note, isoSeconds(t.created_at)];
    });
    last = rows.length ? Number(rows[rows.length - 1].id) : lastKey;
  }
  const done = records.length < q.limit || last >= lastKey;
  return { text: records.map(csvRecord).join(''), rows: records.length, cursor: done ? lastKey : last, done };
}
