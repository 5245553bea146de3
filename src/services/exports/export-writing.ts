import type { EntityManager } from '@mikro-orm/postgresql';
import type { ExportProgress } from '../../contracts/exports-contract';
import {
  appendExportPage,
  expireExportFile,
  findExport,
  lockExport,
  markExportReady,
  type ExportRow,
} from '../../db/exports-store';
import { exportRows } from '../../metrics/registry';
import { recordEvent } from '../webhooks/events';
import { exportHeader, isoTime, renderPage } from './export-csv';

// The worker's side of an export job: its workflow writes the file one page at a time, marks it
// ready (with `export.ready` in the outbox, in the same transaction), and deletes it when its
// link expires. Every step reads where the export stands from its row, locked, so a step retried
// after a lost worker continues from the last page committed and never writes one twice.

export interface ExportSettings {
  pageRows: number;
  linkSeconds: number;
  publicBaseUrl: string;
}

const progressOf = (row: ExportRow, written: boolean): ExportProgress => ({
  status: row.status,
  rows: row.rows,
  pages: row.pages,
  written,
  expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null,
});

/** Every row of the window is in the file (an empty range still has its header page). */
const isWritten = (row: ExportRow) =>
  row.pages > 0 && (row.last_key === null || (row.cursor !== null && Number(row.cursor) >= Number(row.last_key)));

/** Writes the export's next page, unless every page is written (or it is no longer running). */
export async function writeNextPage(
  em: EntityManager,
  exportId: string,
  settings: ExportSettings,
): Promise<ExportProgress> {
  const { progress, kind, rows } = await em.transactional(async (tx) => {
    const row = await lockExport(tx, exportId);
    if (!row) throw new Error(`export ${exportId} is not in Postgres`);
    if (row.status !== 'running' || isWritten(row)) return { progress: progressOf(row, true), kind: row.kind, rows: 0 };
    const page = await renderPage(tx, row.kind, {
      accountId: row.account_id,
      from: new Date(row.range_from),
      to: new Date(row.range_to),
      window: {
        rows: row.total_rows,
        firstKey: row.first_key === null ? null : Number(row.first_key),
        lastKey: row.last_key === null ? null : Number(row.last_key),
      },
      after: row.cursor === null ? null : Number(row.cursor),
      limit: settings.pageRows,
      baseUrl: settings.publicBaseUrl,
    });
    const content = (row.pages === 0 ? exportHeader(row.kind) : '') + page.text;
    const cursor = row.last_key === null ? null : page.cursor;
    await appendExportPage(tx, { exportId, page: row.pages, rows: page.rows, content, cursor });
    const after = {
      ...row,
      rows: row.rows + page.rows,
      pages: row.pages + 1,
      cursor: cursor === null ? null : String(cursor),
    };
    return { progress: progressOf(after, page.done), kind: row.kind, rows: page.rows };
  });
  exportRows.inc({ kind, mode: 'job' }, rows);
  return progress;
}

/** running → ready, its expiry set and `export.ready` recorded with it; the state as it is otherwise. */
export async function finishExport(
  em: EntityManager,
  exportId: string,
  settings: ExportSettings,
): Promise<ExportProgress> {
  return em.transactional(async (tx) => {
    const ready = await markExportReady(tx, exportId, settings.linkSeconds);
    if (ready) {
      await recordEvent(tx, ready.account_id, 'export.ready', {
        exportId: ready.id,
        externalExportId: ready.external_export_id,
        kind: ready.kind,
        from: isoTime(new Date(ready.range_from)),
        to: isoTime(new Date(ready.range_to)),
        rows: ready.rows,
        expiresAt: Math.floor(new Date(ready.expires_at!).getTime() / 1000),
      });
      return progressOf(ready, true);
    }
    const row = await findExport(tx, { id: exportId });
    if (!row) throw new Error(`export ${exportId} is not in Postgres`);
    return progressOf(row, true);
  });
}

/** ready → expired, deleting the file. */
export async function expireExport(em: EntityManager, exportId: string): Promise<void> {
  await expireExportFile(em, exportId);
}
