import { createHmac, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ExportKind } from '../../contracts/exports-contract';
import { exportPageContent, findExport, recentExports, type ExportRow } from '../../db/exports-store';
import { ApiError } from '../../domain/errors';
import { exportRows } from '../../metrics/registry';
import { exportHeader, exportWindow, isoTime, renderPage, type ExportRange } from './export-csv';

// The API's reads of exports: a small date range streamed as CSV straight from keyset pages, an
// export job's state, and its file, downloaded by a link that is itself the credential. The link
// is derived from the export and a key only the API holds (HMAC), so it is stored nowhere, never
// reaches the worker or Temporal, and the access log writes paths without their query.

export interface ExportView {
  exportId: string;
  externalExportId: string;
  kind: ExportKind;
  from: string;
  to: string;
  status: ExportRow['status'];
  /** Rows written so far, of `totalRows` (the rows of the range when the export was requested). */
  rows: number;
  totalRows: number;
  createdAt: number;
  readyAt: number | null;
  expiresAt: number | null;
  /** While ready: where the file is, for anyone holding the link, until expiresAt. */
  downloadUrl: string | null;
}

export interface LinkSigner {
  /** The key download links are signed with (derived from SESSION_SECRET or CURSOR_SECRET). */
  key: string;
  /** PUBLIC_BASE_URL + the API prefix. */
  apiUrl: string;
}

const unix = (t: string | null) => (t ? Math.floor(new Date(t).getTime() / 1000) : null);

const linkToken = (signer: LinkSigner, row: Pick<ExportRow, 'id' | 'expires_at'>) =>
  createHmac('sha256', signer.key)
    .update(`${row.id}\0${new Date(row.expires_at!).getTime()}`)
    .digest('base64url');

/** Only the token this server made for the export (base64url decoding forgives other spellings of it). */
function tokenMatches(signer: LinkSigner, row: ExportRow, token: string): boolean {
  const expected = Buffer.from(linkToken(signer, row), 'base64url');
  const given = Buffer.from(token, 'base64url');
  return given.length === expected.length && given.toString('base64url') === token && timingSafeEqual(given, expected);
}

const isLive = (row: ExportRow) =>
  row.status === 'ready' && row.expires_at !== null && new Date(row.expires_at).getTime() > Date.now();

export function exportView(row: ExportRow, signer: LinkSigner): ExportView {
  return {
    exportId: row.id,
    externalExportId: row.external_export_id,
    kind: row.kind,
    from: isoTime(new Date(row.range_from)),
    to: isoTime(new Date(row.range_to)),
    status: row.status === 'ready' && !isLive(row) ? 'expired' : row.status,
    rows: row.rows,
    totalRows: row.total_rows,
    createdAt: unix(row.created_at)!,
    readyAt: unix(row.ready_at),
    expiresAt: unix(row.expires_at),
    downloadUrl: isLive(row)
      ? `${signer.apiUrl}/exports/${encodeURIComponent(row.id)}/download?token=${linkToken(signer, row)}`
      : null,
  };
}

export async function getExport(
  em: EntityManager,
  accountId: string,
  id: string,
  signer: LinkSigner,
): Promise<ExportView> {
  const row = await findExport(em, { id, accountId });
  if (!row) throw new ApiError('not_found', `Export ${id} not found`);
  return exportView(row, signer);
}

export async function listExports(
  em: EntityManager,
  accountId: string,
  signer: LinkSigner,
  limit = 20,
): Promise<ExportView[]> {
  return (await recentExports(em, accountId, limit)).map((r) => exportView(r, signer));
}

/** A CSV answer: its file name, its length when known, and its text in pieces to write as they come. */
export interface CsvFile {
  filename: string;
  bytes?: number;
  chunks: AsyncIterable<string>;
}

const fileName = (kind: ExportKind, from: Date, to: Date) =>
  `${kind}-${isoTime(from).replace(/:/g, '')}-${isoTime(to).replace(/:/g, '')}.csv`;

/**
 * A date range streamed as CSV: refused before anything is sent when it holds more than
 * `maxRows` rows (a job writes those); otherwise read one keyset page at a time.
 */
export async function openRangeCsv(
  em: EntityManager,
  kind: ExportKind,
  range: ExportRange,
  opts: { maxRows: number; pageRows: number; baseUrl: string },
): Promise<CsvFile> {
  const window = await exportWindow(em, kind, range);
  if (window.rows > opts.maxRows) {
    throw new ApiError(
      'invalid_input',
      `The range holds ${window.rows} rows, more than ${opts.maxRows} can be streamed: create an export job with POST /exports`,
      {
        field: 'to',
        reason: 'too_many_rows',
        rows: window.rows,
        maxRows: opts.maxRows,
      },
    );
  }
  async function* chunks() {
    yield exportHeader(kind);
    let after: number | null = null;
    for (;;) {
      const page = await renderPage(em, kind, { ...range, window, after, limit: opts.pageRows, baseUrl: opts.baseUrl });
      exportRows.inc({ kind, mode: 'stream' }, page.rows);
      if (page.text) yield page.text;
      if (page.done) return;
      after = page.cursor;
    }
  }
  return { filename: fileName(kind, range.from, range.to), chunks: chunks() };
}

/**
 * An export job's file, for a request that holds its link: the same answer (not_found) for an
 * unknown export, a wrong token and an expired link, so none can be told from another. Read one
 * stored page at a time.
 */
export async function openDownload(em: EntityManager, id: string, token: string, signer: LinkSigner): Promise<CsvFile> {
  const row = await findExport(em, { id });
  if (!row || !isLive(row) || !tokenMatches(signer, row, token))
    throw new ApiError('not_found', 'This download link is unknown or has expired');
  async function* chunks() {
    for (let page = 0; page < row!.pages; page++) {
      const content = await exportPageContent(em, row!.id, page);
      // The file was deleted while it was being sent (its link expired): the answer is cut short.
      if (content === undefined) throw new Error(`export ${row!.id} lost page ${page} while it was sent`);
      yield content;
    }
  }
  return {
    filename: fileName(row.kind, new Date(row.range_from), new Date(row.range_to)),
    bytes: Number(row.bytes),
    chunks: chunks(),
  };
}
