import { randomBytes } from 'node:crypto';
import type { Request, Response, Router } from 'express';
import { ZodError } from 'zod';
import { MAX_BATCH_LINES } from '../../contracts/batches-contract';
import { CsvError, parseCsvWithHeader } from '../../domain/csv';
import { ApiError } from '../../domain/errors';
import type { AppContext } from '../../http/context';
import { CreateBatchBody } from '../../http/routers/batches-router';
import {
  getBatch,
  listBatchLines,
  listBatches,
  type BatchLineView,
  type BatchView,
} from '../../services/orders/batch-queries';
import { submitBatch } from '../../services/orders/batch-submission';
import { html } from '../page-layout';
import { area, formError, type Area } from './account-area';
import { BatchForm, IdParams, ListQuery } from './account-forms';
import { areaPage, csrfField, errorBox, plainMessage, send, when } from './account-layout';

// Order batches from a CSV file, through the service behind POST /batches: each line an order
// placed by the order API's rules, in line order, by the batch's workflow. A batch's page shows
// its progress (reloading itself while it runs) and its lines; a placed line links to its order,
// whose codes are revealed there like any order's.

const LINES_PAGE = 50;
const COLUMNS = ['externalOrderId', 'productId', 'qty', 'expectedUnitPrice'];
export const UPLOAD_SCRIPT_PATH = '/account/assets/batch-upload.js';

/** Reads the chosen file into the form's text box, so the form posts it (a page without script takes pasted text). */
const UPLOAD_SCRIPT = `document.getElementById('csv-file').addEventListener('change', function (e) {
  var file = e.target.files && e.target.files[0];
  if (!file) return;
  file.text().then(function (text) { document.getElementById('csv').value = text; });
});`;

function progressText(b: BatchView): string {
  return `${b.placed} placed, ${b.rejected} refused, ${b.pending} waiting, of ${b.total}`;
}

function batchRow(b: BatchView) {
  return html`<tr data-testid="batch-row" data-batch-id="${b.batchId}">
  <td data-label="Batch"><a href="/account/batches/${b.batchId}" class="code">${b.externalBatchId}</a></td>
  <td data-label="Sent">${when(b.createdAt)}</td>
  <td data-label="Status"><span class="status ${b.status === 'completed' ? 'fulfilled' : ''}">${b.status}</span></td>
  <td data-label="Lines">${progressText(b)}</td>
</tr>`;
}

async function batchesPage(a: Area, opts: { error?: string; csv?: string } = {}): Promise<string> {
  const batches = await listBatches(a.em, a.accountId);
  const nonce = `web-${randomBytes(12).toString('base64url')}`;
  return areaPage({
    title: 'Batches',
    section: 'batches',
    email: a.email,
    csrf: a.csrf,
    refreshSeconds: batches.some((b) => b.status === 'running') && !opts.error ? 3 : undefined,
    body: html`<h1>Batches</h1>
<p class="muted">Up to ${MAX_BATCH_LINES} orders from one CSV file, paid from your balance. Each line is placed in turn exactly as an order
through the API would be: a repeated id is the same order, a line your balance no longer covers is refused and later cheaper lines may still pass.</p>
<p class="muted">Columns, with this header: <span class="code">${COLUMNS.join(',')}</span> (the price lock may be left empty).</p>
${errorBox(opts.error)}
<form method="post" action="/account/batches">
  ${csrfField(a.csrf)}
  <input type="hidden" name="nonce" value="${nonce}">
  <label for="csv-file">CSV file</label><input id="csv-file" type="file" accept=".csv,text/csv" data-testid="batch-file">
  <label for="csv">or its text <span class="hint">(a file you choose appears here)</span></label>
  <textarea id="csv" name="csv" data-testid="batch-csv" placeholder="${COLUMNS.join(',')}">${opts.csv ?? ''}</textarea>
  <button type="submit" data-testid="batch-submit">Place the orders</button>
</form>
<script src="${UPLOAD_SCRIPT_PATH}" defer></script>
<h2>Your batches</h2>
${
  batches.length === 0
    ? html`<p class="muted" data-testid="no-batches">None yet.</p>`
    : html`<table class="cards" data-testid="batches"><thead><tr><th>Your id</th><th>Sent</th><th>Status</th><th>Lines</th></tr></thead>
<tbody>${batches.map(batchRow)}</tbody></table>`
}`,
  });
}

function lineRow(l: BatchLineView) {
  return html`<tr data-testid="batch-line">
  <td data-label="Line" class="num">${l.line}</td>
  <td data-label="Your id" class="code">${l.externalOrderId}</td>
  <td data-label="Product">${l.productId} × ${l.qty}</td>
  <td data-label="Outcome" data-testid="line-outcome">${
    l.status === 'placed'
      ? html`<a href="/account/orders/${l.orderId}">${l.reused ? 'the order already placed' : 'placed'}</a> · ${l.order?.status ?? ''}`
      : l.status === 'rejected'
        ? html`<span class="status failed">${l.rejection?.error}</span> ${l.rejection?.message}`
        : 'waiting'
  }</td>
</tr>`;
}

/** The text's records as lines for POST /batches' schema (the header names the columns). */
function linesFromCsv(text: string) {
  let rows: Record<string, string>[];
  try {
    const parsed = parseCsvWithHeader(text);
    const missing = COLUMNS.slice(0, 3).filter((c) => !parsed.header.includes(c));
    if (missing.length)
      throw new ApiError('invalid_input', `The header lacks ${missing.join(', ')}: it must be ${COLUMNS.join(',')}`);
    rows = parsed.rows;
  } catch (err) {
    if (err instanceof CsvError) throw new ApiError('invalid_input', `The file is not CSV: ${err.message}`);
    throw err;
  }
  return rows.map((r) => ({
    externalOrderId: r.externalOrderId,
    productId: r.productId,
    qty: /^\d{1,9}$/.test(r.qty) ? Number(r.qty) : r.qty,
    ...(r.expectedUnitPrice ? { expectedUnitPrice: r.expectedUnitPrice } : {}),
  }));
}

/** A refused line named by its line in the file (the header is line 1). */
function fileProblem(err: ZodError): ApiError {
  const issue = err.issues[0];
  const [, index, field] = issue.path;
  if (issue.path[0] === 'lines' && typeof index === 'number') {
    return new ApiError(
      'invalid_input',
      `Line ${index + 2}${field ? `, ${String(field)}` : ''}: ${issue.message}. Nothing was placed.`,
    );
  }
  return new ApiError(
    'invalid_input',
    `${issue.path[0] === 'lines' ? `A batch holds 1 to ${MAX_BATCH_LINES} lines` : issue.message}. Nothing was placed.`,
  );
}

export function batchRoutes(router: Router, ctx: AppContext): void {
  router.get(UPLOAD_SCRIPT_PATH.replace('/account', ''), (_req, res) => {
    res
      .set({
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=300',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(UPLOAD_SCRIPT);
  });

  router.get('/batches', async (req, res) => {
    send(res, 200, await batchesPage(area(req, res, ctx)));
  });

  router.post('/batches', async (req: Request, res: Response) => {
    const a = area(req, res, ctx);
    const csv = typeof req.body?.csv === 'string' ? req.body.csv : '';
    try {
      const form = BatchForm.parse(req.body ?? {});
      const parsed = CreateBatchBody.safeParse({ externalBatchId: form.nonce, lines: linesFromCsv(form.csv) });
      if (!parsed.success) throw fileProblem(parsed.error);
      const batch = await submitBatch(
        { em: a.em, temporal: ctx.temporal, config: ctx.config },
        { ...parsed.data, accountId: a.accountId },
      );
      res.redirect(303, `/account/batches/${encodeURIComponent(batch.batchId)}`);
    } catch (err) {
      const e = formError(err);
      send(res, e.status, await batchesPage(a, { error: plainMessage(e), csv: csv.slice(0, 2_000_000) }), e.headers);
    }
  });

  router.get('/batches/:id', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const query = ListQuery.parse(req.query);
    const batch = await getBatch(a.em, a.accountId, id);
    const lines = await listBatchLines(a.em, {
      accountId: a.accountId,
      batchId: id,
      limit: LINES_PAGE,
      cursor: query.cursor,
      cursorSecret: ctx.config.CURSOR_SECRET,
      baseUrl: ctx.config.publicBaseUrl,
    });
    send(
      res,
      200,
      areaPage({
        title: `Batch ${batch.externalBatchId}`,
        section: 'batches',
        email: a.email,
        csrf: a.csrf,
        refreshSeconds: batch.status === 'running' ? 2 : undefined,
        body: html`<h1>Batch <span class="code">${batch.externalBatchId}</span></h1>
<dl>
  <dt>Status</dt><dd><span class="status ${batch.status === 'completed' ? 'fulfilled' : ''}" data-testid="batch-status">${batch.status}</span></dd>
  <dt>Sent</dt><dd>${when(batch.createdAt)}</dd>
  <dt>Progress</dt><dd><progress max="${batch.total}" value="${batch.placed + batch.rejected}" data-testid="batch-bar"></progress>
    <span data-testid="batch-progress">${progressText(batch)}</span></dd>
  ${batch.completedAt ? html`<dt>Completed</dt><dd>${when(batch.completedAt)}</dd>` : ''}
</dl>
<h2>Lines</h2>
<table class="cards" data-testid="batch-lines"><thead><tr><th class="num">Line</th><th>Your id</th><th>Product</th><th>Outcome</th></tr></thead>
<tbody>${lines.items.map(lineRow)}</tbody></table>
<div class="pager">${query.cursor ? html`<a href="/account/batches/${batch.batchId}">First lines</a>` : ''}${
          lines.nextCursor
            ? html`<a href="/account/batches/${batch.batchId}?cursor=${lines.nextCursor}" data-testid="more-lines">More lines</a>`
            : ''
        }</div>
<p><a href="/account/batches">All batches</a></p>`,
      }),
    );
  });
}
