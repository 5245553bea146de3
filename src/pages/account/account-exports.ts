import { randomBytes } from 'node:crypto';
import type { Request, Response, Router } from 'express';
import type { AppContext } from '../../http/context';
import { sendCsv } from '../../http/csv-response';
import { linkSigner } from '../../http/routers/exports-router';
import { listExports, openRangeCsv, type ExportView } from '../../services/exports/export-queries';
import { submitExport } from '../../services/exports/export-submission';
import { html } from '../page-layout';
import { area, formError, noticeFrom, type Area } from './account-area';
import { ExportForm } from './account-forms';
import { areaPage, csrfField, errorBox, noticeBox, plainMessage, send, when } from './account-layout';

// Orders and the ledger as CSV files, through the services behind GET /exports/…csv and POST
// /exports. A form posts (it carries the CSRF token, which a GET would put in the URL): "Download
// now" answers with the file itself, "Prepare a file" starts an export job, listed below with its
// progress and, once ready, its download link, for a day. Days are whole UTC days, both included.

const NOTICES = {
  preparing: 'The file is being prepared. This page shows its progress and its download link once it is ready.',
};
const DAY_MS = 86_400_000;

type Shown = { kind?: string; from?: string; to?: string };

function exportRow(e: ExportView) {
  const state =
    e.status === 'running'
      ? `writing: ${e.rows} of ${e.totalRows} rows`
      : e.status === 'ready'
        ? `ready: ${e.rows} rows`
        : 'expired';
  return html`<tr data-testid="export-row" data-export-id="${e.exportId}">
  <td data-label="Kind">${e.kind === 'orders' ? 'Orders' : 'Ledger'}</td>
  <td data-label="From">${e.from}</td>
  <td data-label="To (excluded)">${e.to}</td>
  <td data-label="Status" data-testid="export-status">${state}</td>
  <td data-label="File">${
    e.downloadUrl
      ? html`<a href="${e.downloadUrl}" rel="noreferrer" download data-testid="export-download">Download</a> <span class="muted">until ${when(e.expiresAt)}</span>`
      : '—'
  }</td>
</tr>`;
}

async function exportsPage(
  a: Area,
  ctx: AppContext,
  opts: { error?: string; notice?: string; shown?: Shown } = {},
): Promise<string> {
  const exports = await listExports(a.em, a.accountId, linkSigner(ctx));
  const nonce = `web-${randomBytes(12).toString('base64url')}`;
  const today = new Date().toISOString().slice(0, 10);
  const monthAgo = new Date(Date.now() - 30 * DAY_MS).toISOString().slice(0, 10);
  const shown = opts.shown ?? {};
  return areaPage({
    title: 'Exports',
    section: 'exports',
    email: a.email,
    csrf: a.csrf,
    refreshSeconds: exports.some((e) => e.status === 'running') ? 2 : undefined,
    body: html`<h1>Exports</h1>
<p class="muted">Your orders or your ledger for a range of days (UTC, both days included) as a CSV file: UTF-8, a header line,
amounts as the API gives them, times in ISO 8601 UTC. Up to ${ctx.config.EXPORT_STREAM_MAX_ROWS} rows download at once;
prepare a file for more. A prepared file can be downloaded for ${Math.round(ctx.config.EXPORT_LINK_SECONDS / 3600)} hours.</p>
${noticeBox(opts.notice)}${errorBox(opts.error)}
<form method="post" action="/account/exports" class="inline-form">
  ${csrfField(a.csrf)}
  <input type="hidden" name="nonce" value="${nonce}">
  <div><label for="kind">What</label><select id="kind" name="kind">
    ${[
      ['orders', 'Orders'],
      ['ledger', 'Ledger'],
    ].map(([v, label]) => html`<option value="${v}"${v === shown.kind ? ' selected' : ''}>${label}</option>`)}
  </select></div>
  <div><label for="from">From</label><input id="from" name="from" type="date" value="${shown.from ?? monthAgo}" required></div>
  <div><label for="to">To</label><input id="to" name="to" type="date" value="${shown.to ?? today}" required></div>
  <div><button type="submit" name="mode" value="now" data-testid="export-now">Download now</button>
    <button type="submit" name="mode" value="file" class="secondary" data-testid="export-prepare">Prepare a file</button></div>
</form>
<h2>Prepared files</h2>
${
  exports.length === 0
    ? html`<p class="muted" data-testid="no-exports">None yet.</p>`
    : html`<table class="cards" data-testid="exports"><thead><tr><th>Kind</th><th>From</th><th>To (excluded)</th><th>Status</th><th>File</th></tr></thead>
<tbody>${exports.map(exportRow)}</tbody></table>`
}`,
  });
}

export function exportRoutes(router: Router, ctx: AppContext): void {
  router.get('/exports', async (req, res) => {
    send(res, 200, await exportsPage(area(req, res, ctx), ctx, { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/exports', async (req: Request, res: Response) => {
    const a = area(req, res, ctx);
    const body = req.body ?? {};
    const shown: Shown = {
      kind: String(body.kind ?? '').slice(0, 16),
      from: String(body.from ?? '').slice(0, 10),
      to: String(body.to ?? '').slice(0, 10),
    };
    try {
      const form = ExportForm.parse(body);
      const range = {
        accountId: a.accountId,
        from: new Date(`${form.from}T00:00:00Z`),
        to: new Date(new Date(`${form.to}T00:00:00Z`).getTime() + DAY_MS),
      };
      if (form.mode === 'now') {
        const file = await openRangeCsv(a.em, form.kind, range, {
          maxRows: ctx.config.EXPORT_STREAM_MAX_ROWS,
          pageRows: ctx.config.EXPORT_PAGE_ROWS,
          baseUrl: ctx.config.publicBaseUrl,
        });
        return await sendCsv(res, file, ctx.logger);
      }
      await submitExport(
        { em: a.em, temporal: ctx.temporal, signer: linkSigner(ctx) },
        { ...range, kind: form.kind, externalExportId: form.nonce },
      );
      res.redirect(303, '/account/exports?notice=preparing');
    } catch (err) {
      const e = formError(err);
      const message =
        e.details?.reason === 'too_many_rows'
          ? `These days hold ${e.details.rows} rows, more than can be downloaded at once: choose “Prepare a file”.`
          : plainMessage(e);
      send(res, e.status, await exportsPage(a, ctx, { error: message, shown }), e.headers);
    }
  });
}
