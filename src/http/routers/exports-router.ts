import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Router } from 'express';
import { EXPORT_KINDS, type ExportKind } from '../../contracts/exports-contract';
import { derivedSessionSecret } from '../form-pages';
import { getExport, openDownload, openRangeCsv, type LinkSigner } from '../../services/exports/export-queries';
import { submitExport } from '../../services/exports/export-submission';
import { API_PREFIX } from '../api-prefix';
import type { AppContext } from '../context';
import { sendCsv } from '../csv-response';
import { z } from '../openapi';
import { IdString } from '../hygiene';
import { addRoute } from '../route';

// Orders and the ledger of a date range as CSV (beyond the spec's 1.4.0): a small range streamed
// at once, any range as an export job whose file is downloaded by a link valid for a day.

const EARLIEST = Date.UTC(1970, 0, 1);
const LATEST = Date.UTC(10000, 0, 1);

/** An instant in ISO 8601: a date (midnight UTC) or a date-time with `Z` or an offset. */
export const Instant = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()])
  .transform((s) => new Date(s.length === 10 ? `${s}T00:00:00Z` : s))
  .refine((d) => d.getTime() >= EARLIEST && d.getTime() < LATEST, 'must be between 1970 and 9999')
  .openapi({
    description: 'ISO 8601: a date (midnight UTC) or a date-time with Z or an offset',
    example: '2026-12-01T00:00:00Z',
  });

export const RangeQuery = z.object({
  from: Instant.openapi({ description: 'Start of the range (included)' }),
  to: Instant.openapi({ description: 'End of the range (excluded)' }),
});

export const CreateExportBody = z
  .object({
    externalExportId: IdString(64).openapi({ description: 'Your id for this export: the same id is the same export' }),
    kind: z.enum(EXPORT_KINDS as [ExportKind, ...ExportKind[]]),
    ...RangeQuery.shape,
  })
  .strict()
  .openapi('CreateExport');

const ExportBody = z
  .object({
    exportId: z.string(),
    externalExportId: z.string(),
    kind: z.enum(['orders', 'ledger']),
    from: z.string().describe('ISO 8601 UTC'),
    to: z.string().describe('ISO 8601 UTC'),
    status: z.enum(['running', 'ready', 'expired']),
    rows: z.number().int().min(0).describe('Rows written so far'),
    totalRows: z
      .number()
      .int()
      .min(0)
      .describe('Rows of the range when the export was requested (later rows do not join it)'),
    createdAt: z.number().int(),
    readyAt: z.number().int().nullable(),
    expiresAt: z.number().int().nullable().describe('Unix seconds when the link stops working and the file is deleted'),
    downloadUrl: z
      .string()
      .nullable()
      .describe('While ready: the file, for anyone holding this link (no key needed). Treat it as a secret'),
  })
  .openapi('Export');

const CsvText = z.string().openapi({
  description:
    'RFC 4180: CRLF line ends, a header record, values exactly as the API gives them (Decimal strings, ids), times in ISO 8601 UTC, null as an empty field',
});

const RANGE_NOTE =
  'Rows created in [from, to), oldest first. A range of more than EXPORT_STREAM_MAX_ROWS (10,000 by default) rows is refused with ' +
  '`invalid_input` (`details.reason` = `too_many_rows`): create an export job with POST /exports instead.';

/** The key export download links are signed with (never the one that signs sessions or cursors). */
export const linkSigner = (ctx: AppContext): LinkSigner => ({
  key: derivedSessionSecret(ctx.config, 'export-download-links'),
  apiUrl: `${ctx.config.publicBaseUrl}${API_PREFIX}`,
});

export function exportRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  const signer = linkSigner(ctx);
  const stream = (kind: ExportKind) =>
    addRoute(
      router,
      registry,
      mount,
      {
        method: 'get',
        path: `/exports/${kind}.csv`,
        operationId: kind === 'orders' ? 'exportOrdersCsv' : 'exportLedgerCsv',
        tag: 'Exports',
        scope: 'read',
        summary:
          kind === 'orders'
            ? 'Orders of a date range as CSV, streamed'
            : 'Ledger rows of a date range as CSV, streamed',
        description: RANGE_NOTE,
        query: RangeQuery,
        response: CsvText,
        csv: true,
        responseHeaders: ['Content-Disposition'],
      },
      async ({ query, principal, res }) => {
        const file = await openRangeCsv(
          ctx.orm.em.fork(),
          kind,
          { accountId: principal.account.id, ...query },
          {
            maxRows: ctx.config.EXPORT_STREAM_MAX_ROWS,
            pageRows: ctx.config.EXPORT_PAGE_ROWS,
            baseUrl: ctx.config.publicBaseUrl,
          },
        );
        await sendCsv(res, file, ctx.logger);
      },
    );
  stream('orders');
  stream('ledger');

  // A job writes down only what a read key may already list: `read` makes one, though it is a POST.
  addRoute(
    router,
    registry,
    mount,
    {
      method: 'post',
      path: '/exports',
      operationId: 'createExport',
      tag: 'Exports',
      scope: 'read',
      summary: 'An export job for a date range of any size',
      description:
        'Accepted at once; a workflow writes the file. Poll GET /exports/{id} (or await `export.ready`) for its downloadUrl, valid for a day. Idempotent on externalExportId.',
      body: CreateExportBody,
      response: ExportBody.extend({ reused: z.boolean() }).openapi('ExportCreated'),
      errors: ['idempotency_conflict'],
    },
    async ({ body, principal }) =>
      submitExport(
        { em: ctx.orm.em.fork(), temporal: ctx.temporal, signer },
        { ...body, accountId: principal.account.id },
      ),
  );

  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/exports/:id',
      operationId: 'getExport',
      tag: 'Exports',
      scope: 'read',
      summary: 'An export job: progress, and its download link once ready',
      params: z.object({ id: IdString(128) }),
      response: ExportBody,
      errors: ['not_found'],
    },
    async ({ params, principal }) => getExport(ctx.orm.em.fork(), principal.account.id, params.id, signer),
  );
}

/** The download of an export's file: no key (the link is the credential), so it is mounted before the API's key check. */
export function exportDownloadRoutes(router: Router, registry: OpenAPIRegistry, mount: string, ctx: AppContext): void {
  const signer = linkSigner(ctx);
  addRoute(
    router,
    registry,
    mount,
    {
      method: 'get',
      path: '/exports/:id/download',
      operationId: 'downloadExport',
      tag: 'Exports',
      summary: "An export job's CSV file, by its download link",
      description:
        'The downloadUrl of a ready export, as given: no Authorization header. An unknown export, a wrong token and an expired link are all `not_found`.',
      auth: 'link',
      params: z.object({ id: IdString(128) }),
      query: z.object({ token: IdString(128) }),
      response: CsvText,
      csv: true,
      responseHeaders: ['Content-Disposition'],
      errors: ['not_found'],
    },
    async ({ params, query, res }) => {
      await sendCsv(res, await openDownload(ctx.orm.em.fork(), params.id, query.token, signer), ctx.logger);
    },
  );
}
