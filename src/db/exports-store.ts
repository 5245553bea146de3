import type { EntityManager } from '@mikro-orm/postgresql';
import type { ExportKind, ExportStatus } from '../contracts/exports-contract';
import type { Order } from './entities/all-entities';
import type { LedgerRow } from './ledger-store';

// CSV exports: the rows of a date range read in keyset pages, and the export jobs with their
// file, kept as pages of CSV text (Postgres is the service's only store). A range is turned into
// a window of keys once (orders by order_number, ledger rows by id, the order the API lists
// them in), from the index by time, so each page is an index range scan of at most a page of rows.

/** The keys of a date range of one account's rows: how many, the first and the last (null when none). */
export interface KeyWindow {
  rows: number;
  firstKey: number | null;
  lastKey: number | null;
}

const WINDOW_SQL: Record<ExportKind, string> = {
  orders:
    'select count(*)::int as rows, min(order_number) as first, max(order_number) as last from orders where account_id = ? and created_at >= ? and created_at < ?',
  ledger:
    'select count(*)::int as rows, min(id) as first, max(id) as last from ledger_transactions where account_id = ? and created_at >= ? and created_at < ?',
};

export async function keyWindow(
  em: EntityManager,
  kind: ExportKind,
  accountId: string,
  from: Date,
  to: Date,
): Promise<KeyWindow> {
  const [row] = await em.execute<{ rows: number; first: string | null; last: string | null }[]>(WINDOW_SQL[kind], [
    accountId,
    from,
    to,
  ]);
  return {
    rows: row.rows,
    firstKey: row.first === null ? null : Number(row.first),
    lastKey: row.last === null ? null : Number(row.last),
  };
}

export interface PageQuery {
  accountId: string;
  from: Date;
  to: Date;
  /** Keys above this one… */
  after: number;
  /** …up to this one. */
  upTo: number;
  limit: number;
}

/** An order's columns that an export shows, named as the entity names them. */
export type ExportedOrder = Pick<
  Order,
  | 'id'
  | 'kind'
  | 'externalOrderId'
  | 'externalTopupId'
  | 'channel'
  | 'productId'
  | 'qty'
  | 'unitPrice'
  | 'amount'
  | 'currency'
  | 'status'
  | 'deliveryType'
  | 'fulfillmentStatus'
  | 'fulfilledQuantity'
  | 'errorCode'
  | 'resolution'
  | 'createdAt'
  | 'paidAt'
> & { orderNumber: string };

/**
 * A page of orders in order_number order: the columns an export shows, as plain rows (no entity
 * is hydrated, so a page of thousands leaves little behind for the garbage collector).
 */
export async function ordersPage(em: EntityManager, q: PageQuery): Promise<ExportedOrder[]> {
  const rows = await em.execute<
    (Omit<ExportedOrder, 'createdAt' | 'paidAt'> & { createdAt: string; paidAt: string | null })[]
  >(
    `select id, kind, external_order_id as "externalOrderId", external_topup_id as "externalTopupId", channel, product_id as "productId", qty,
            unit_price as "unitPrice", amount, currency, status, delivery_type as "deliveryType", fulfillment_status as "fulfillmentStatus",
            fulfilled_quantity as "fulfilledQuantity", error_code as "errorCode", resolution, created_at as "createdAt", paid_at as "paidAt",
            order_number as "orderNumber"
       from orders where account_id = ? and order_number > ? and order_number <= ? and created_at >= ? and created_at < ?
      order by order_number limit ?`,
    [q.accountId, q.after, q.upTo, q.from, q.to, q.limit],
  );
  // Raw rows carry times as Postgres writes them.
  return rows.map((r) => ({
    ...r,
    createdAt: new Date(r.createdAt),
    paidAt: r.paidAt === null ? null : new Date(r.paidAt),
  }));
}

/** A page of ledger rows in id order. */
export function ledgerRowsPage(em: EntityManager, q: PageQuery): Promise<LedgerRow[]> {
  return em.execute<LedgerRow[]>(
    `select id, type, amount, balance_after, order_id, note, created_at from ledger_transactions
      where account_id = ? and id > ? and id <= ? and created_at >= ? and created_at < ? order by id limit ?`,
    [q.accountId, q.after, q.upTo, q.from, q.to, q.limit],
  );
}

/** An export as `select *` reads it (times as Postgres writes them). */
export interface ExportRow {
  id: string;
  account_id: string;
  external_export_id: string;
  kind: ExportKind;
  range_from: string;
  range_to: string;
  status: ExportStatus;
  first_key: string | null;
  last_key: string | null;
  total_rows: number;
  cursor: string | null;
  rows: number;
  pages: number;
  bytes: string;
  created_at: string;
  ready_at: string | null;
  expires_at: string | null;
}

/** Inserts an export, or finds the account's export under this externalExportId; `created` tells which. */
export async function insertExport(
  em: EntityManager,
  e: {
    id: string;
    accountId: string;
    externalExportId: string;
    kind: ExportKind;
    from: Date;
    to: Date;
    window: KeyWindow;
  },
): Promise<{ row: ExportRow; created: boolean }> {
  const inserted = await em.execute<ExportRow[]>(
    `insert into exports (id, account_id, external_export_id, kind, range_from, range_to, first_key, last_key, total_rows)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict (account_id, external_export_id) do nothing returning *`,
    [e.id, e.accountId, e.externalExportId, e.kind, e.from, e.to, e.window.firstKey, e.window.lastKey, e.window.rows],
  );
  if (inserted[0]) return { row: inserted[0], created: true };
  const [existing] = await em.execute<ExportRow[]>(
    'select * from exports where account_id = ? and external_export_id = ?',
    [e.accountId, e.externalExportId],
  );
  return { row: existing, created: false };
}

export async function findExport(
  em: EntityManager,
  where: { id: string; accountId?: string },
): Promise<ExportRow | undefined> {
  const [row] = await em.execute<ExportRow[]>(
    `select * from exports where id = ?${where.accountId ? ' and account_id = ?' : ''}`,
    where.accountId ? [where.id, where.accountId] : [where.id],
  );
  return row;
}

/** An account's exports, newest first. */
export function recentExports(em: EntityManager, accountId: string, limit: number): Promise<ExportRow[]> {
  return em.execute<ExportRow[]>(
    'select * from exports where account_id = ? order by created_at desc, id desc limit ?',
    [accountId, limit],
  );
}

/** Locks the export for the rest of the caller's transaction (one page is written at a time). */
export async function lockExport(em: EntityManager, id: string): Promise<ExportRow | undefined> {
  const [row] = await em.execute<ExportRow[]>('select * from exports where id = ? for update', [id]);
  return row;
}

/** Stores the next page and moves the export's cursor past it, in the caller's transaction. */
export async function appendExportPage(
  em: EntityManager,
  p: { exportId: string; page: number; rows: number; content: string; cursor: number | null },
): Promise<void> {
  await em.execute(
    `with page as (insert into export_pages (export_id, page, rows, content) values (?, ?, ?, ?))
     update exports set cursor = ?, rows = rows + ?, pages = pages + 1, bytes = bytes + ?, updated_at = now() where id = ?`,
    [p.exportId, p.page, p.rows, p.content, p.cursor, p.rows, Buffer.byteLength(p.content, 'utf8'), p.exportId],
  );
}

/** running → ready with its expiry; undefined when it was not running. */
export async function markExportReady(
  em: EntityManager,
  id: string,
  linkSeconds: number,
): Promise<ExportRow | undefined> {
  const [row] = await em.execute<ExportRow[]>(
    `update exports set status = 'ready', ready_at = now(), expires_at = now() + make_interval(secs => ?), updated_at = now()
      where id = ? and status = 'running' returning *`,
    [linkSeconds, id],
  );
  return row;
}

/** ready → expired, its file deleted with it. */
export async function expireExportFile(em: EntityManager, id: string): Promise<void> {
  await em.execute(
    `with gone as (delete from export_pages where export_id = ?)
     update exports set status = 'expired', updated_at = now() where id = ? and status = 'ready'`,
    [id, id],
  );
}

/** One page of an export's file. */
export async function exportPageContent(
  em: EntityManager,
  exportId: string,
  page: number,
): Promise<string | undefined> {
  const [row] = await em.execute<{ content: string }[]>(
    'select content from export_pages where export_id = ? and page = ?',
    [exportId, page],
  );
  return row?.content;
}
