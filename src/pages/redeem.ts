import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ApiError, errorBody } from '../domain/errors';
import type { RedeemFieldDef } from '../domain/redeem-info';
import type { AppContext } from '../http/context';
import { assertCleanInput } from '../http/hygiene';
import { rateLimited } from '../metrics/registry';
import { parseKeyRing } from '../temporal/codec';
import { toApiError } from '../http/middleware';
import { hitRateLimit } from '../services/rate-limit';
import {
  lookupCodeForSite,
  productFieldsForCode,
  siteRedemptionStatus,
  submitRedemption,
  type RedemptionView,
} from '../services/redemptions/redemptions';
import { html, page, sendPage, SafeHtml } from './page-layout';

// The public redemption site behind `redeemUrl` (spec 1, 4.4): an end customer enters a code,
// fills in the product's fields and follows the progress. It calls the same service functions as
// POST /redemptions (one validation, one state machine); test-product codes are refused here.
// No cookies and no sessions: the code travels in the form, the status page is addressed by the
// unguessable redemption id. Every value written into a page is escaped by `html`.

const FIELD_PREFIX = 'rf_';
const TERMINAL = new Set(['fulfilled', 'failed']);
const STATUS_LABEL: Record<string, string> = {
  pending: 'Submitted',
  processing: 'Processing',
  fulfilled: 'Fulfilled',
  failed: 'Failed',
  not_redeemed: 'Not redeemed',
};

const STATUS_SCRIPT = `(() => {
  const root = document.querySelector('[data-poll-url]');
  if (!root) return;
  const url = root.getAttribute('data-poll-url');
  const shown = root.getAttribute('data-status');
  const tick = async () => {
    try {
      const res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store' });
      if (res.ok) {
        const body = await res.json();
        if (body.status !== shown) { location.reload(); return; }
      }
    } catch (e) { /* offline for a moment: try again */ }
    setTimeout(tick, 2000);
  };
  setTimeout(tick, 2000);
})();`;

const maskCode = (code: string) => code.replace(/^(\w{4})-\w{4}-\w{4}-(\w{4})$/, '$1-****-****-$2');

function labelOf(fields: RedeemFieldDef[], key: unknown): string {
  return fields.find((f) => f.key === key)?.label ?? 'this field';
}

/** What an end customer reads for each error (the API's messages are written for developers). */
function messageFor(err: ApiError, fields: RedeemFieldDef[] = []): string {
  const field = err.details?.field;
  switch (err.code) {
    case 'missing_field':
      return `Please fill in “${labelOf(fields, field)}”.`;
    case 'invalid_account_id':
      return `“${labelOf(fields, field)}” must be a UUID, like 123e4567-e89b-12d3-a456-426614174000.`;
    case 'invalid_session_json':
      return `“${labelOf(fields, field)}” must be your user id (a UUID) or the full session JSON of a signed-in session.`;
    case 'invalid_telegram_username':
      return 'Enter a Telegram username: 5 to 32 letters, digits or underscores, starting with a letter (the @ is optional).';
    case 'invalid_input':
      return field ? `Please check “${labelOf(fields, field)}”.` : 'Please check your details.';
    case 'invalid_code':
      return 'We could not find this code. Check it and try again.';
    case 'test_code_only':
      return 'This is an integration test code. It cannot be redeemed on this site.';
    case 'already_redeemed':
      return 'This code has already been submitted.';
    case 'retry_conflict':
      return 'The previous attempt is still being released by the supplier. Please try again in a minute.';
    case 'session_validation_unavailable':
      return 'We could not verify your session right now. Your code was not used; please try again in a minute.';
    case 'rate_limited':
      return 'Too many attempts from your network. Please wait a minute and try again.';
    default:
      return 'Something went wrong on our side. Your details were not lost; please try again.';
  }
}

const errorBox = (message?: string) =>
  message ? html`<p class="error" role="alert" id="form-error">${message}</p>` : undefined;

function codeForm(base: string, opts: { code?: string; error?: string; notice?: SafeHtml } = {}): string {
  return page({
    title: 'Redeem your code',
    body: html`<h1>Redeem your code</h1>
<p class="lead">Enter the code you received with your purchase. You will then be asked for the details needed to apply it.</p>
${errorBox(opts.error)}${opts.notice}
<form method="post" action="${base}" novalidate>
  <label for="code">Code</label>
  <input id="code" name="code" class="code" value="${opts.code ?? ''}" placeholder="XXXX-XXXX-XXXX-XXXX" autocomplete="off"
    autocapitalize="characters" spellcheck="false" maxlength="64" ${opts.error ? html`aria-invalid="true" aria-describedby="form-error"` : ''}>
  <button type="submit">Continue</button>
</form>`,
  });
}

function control(field: RedeemFieldDef, value: string, invalid: boolean): SafeHtml {
  const id = `${FIELD_PREFIX}${field.key}`;
  const aria = invalid ? html` aria-invalid="true" aria-describedby="form-error"` : '';
  if (field.type === 'textarea') {
    return html`<textarea id="${id}" name="${id}" placeholder="${field.placeholder ?? ''}" spellcheck="false"${aria}>${value}</textarea>`;
  }
  if (field.type === 'select') {
    return html`<select id="${id}" name="${id}"${aria}><option value="">Choose…</option>${(field.options ?? []).map(
      (o) => html`<option value="${o}"${o === value ? ' selected' : ''}>${o}</option>`,
    )}</select>`;
  }
  const type = field.type === 'password' ? 'password' : field.type === 'email' ? 'email' : 'text';
  // A password is never written back into a page.
  const shown = field.type === 'password' ? '' : value;
  return html`<input id="${id}" name="${id}" type="${type}" value="${shown}" placeholder="${field.placeholder ?? ''}" autocomplete="off"${aria}>`;
}

function fieldsForm(
  base: string,
  opts: {
    code: string;
    productName: string;
    fields: RedeemFieldDef[];
    values?: Record<string, string>;
    error?: ApiError;
    retry?: boolean;
  },
): string {
  const invalidKey = opts.error?.details?.field;
  return page({
    title: `Redeem ${opts.productName}`,
    body: html`<h1>${opts.productName}</h1>
<p class="lead">Code <span class="code">${opts.code}</span></p>
${opts.retry ? html`<p class="notice">The previous attempt failed. Check your details and submit again.</p>` : ''}
${errorBox(opts.error ? messageFor(opts.error, opts.fields) : undefined)}
<form method="post" action="${base}/submit" novalidate>
  <input type="hidden" name="code" value="${opts.code}">
  ${opts.fields.map(
    (f) => html`<div class="field${f.key === invalidKey ? ' invalid' : ''}">
    <label for="${FIELD_PREFIX}${f.key}">${f.label} ${f.required ? '' : html`<span class="hint">(optional)</span>`}</label>
    ${control(f, opts.values?.[f.key] ?? '', f.key === invalidKey)}
  </div>`,
  )}
  <button type="submit">Redeem</button>
</form>`,
  });
}

function statusPage(base: string, view: RedemptionView & { productName: string }): string {
  const status = view.status;
  const steps = ['pending', 'processing', status === 'failed' ? 'failed' : 'fulfilled'];
  const reached = steps.indexOf(status);
  const done = TERMINAL.has(status);
  const failureText =
    view.failureCode === 'rejected_by_operator'
      ? 'An operator could not apply the code with the details given.'
      : 'The supplier could not apply the code with the details given.';
  return page({
    title: `${STATUS_LABEL[status]} · ${view.productName}`,
    head: done ? undefined : html`<noscript><meta http-equiv="refresh" content="5"></noscript>`,
    scripts: done ? [] : [`${base}/assets/status.js`],
    body: html`<h1>${view.productName}</h1>
<p class="lead">Code <span class="code">${maskCode(view.code)}</span></p>
<div data-status="${status}" ${done ? '' : html`data-poll-url="${base}/status/${view.redemptionId}/json"`}>
  <p>Status: <span id="status" class="status ${status}">${STATUS_LABEL[status]}</span></p>
  <ol class="steps">${steps.map(
    (s, i) => html`<li class="${i < reached ? 'done' : i === reached ? 'current' : ''}">${STATUS_LABEL[s]}</li>`,
  )}</ol>
  ${
    status === 'fulfilled'
      ? html`<div class="notice" id="deliverable"><strong>Your code has been redeemed.</strong><br>${view.deliverable}</div>`
      : status === 'failed'
        ? html`<p class="error">${failureText} Your code can be used again with corrected details.</p>
  <a class="button" href="${base}">Try again</a>`
        : html`<p class="hint">This usually takes a few minutes. This page updates by itself; you can also come back to it later.</p>`
  }
</div>`,
  });
}

export function redeemSite(ctx: AppContext): Router {
  const router = Router();
  router.use(express.urlencoded({ extended: false, limit: '128kb', parameterLimit: 50 }));
  // The form's code is an id and its details free text; both keep the edge's hygiene rule.
  router.use((req, _res, next) => {
    assertCleanInput({ body: req.body });
    next();
  });
  const keys = parseKeyRing(ctx.config.TEMPORAL_PAYLOAD_KEYS);
  const deps = () => ({
    em: ctx.orm.em.fork(),
    temporal: ctx.temporal,
    upstream: ctx.providers.upstream,
    config: ctx.config,
    keys,
  });

  // Per-IP budgets (the site has no key): form posts, and the status page's polling.
  const perIp =
    (name: string, limit: number): RequestHandler =>
    async (req, _res, next) => {
      const result = await hitRateLimit(ctx.orm.em.fork(), `${name}:${req.ip ?? 'unknown'}`, limit, 60);
      if (!result.allowed) {
        rateLimited.inc({ limit: name });
        throw new ApiError('rate_limited', 'Too many requests from this address', undefined, {
          'Retry-After': String(result.retryAfter),
        });
      }
      next();
    };
  const postLimit = perIp('site', ctx.config.SITE_RATE_LIMIT_PER_MINUTE);
  const pollLimit = perIp('site-status', ctx.config.SITE_RATE_LIMIT_PER_MINUTE * 4);
  const str = (v: unknown) => (typeof v === 'string' ? v : '');

  router.get('/', (req, res) => sendPage(res, 200, codeForm(req.baseUrl)));

  router.post('/', postLimit, async (req, res) => {
    const code = str(req.body?.code);
    try {
      const found = await lookupCodeForSite(ctx.orm.em.fork(), code);
      const { redemption } = found;
      if (redemption.redemptionId && redemption.status !== 'failed') {
        return res.redirect(303, `${req.baseUrl}/status/${redemption.redemptionId}`);
      }
      if (found.held) {
        return sendPage(
          res,
          409,
          codeForm(req.baseUrl, {
            code: found.code,
            error: messageFor(new ApiError('retry_conflict', '')),
            notice: html`<p><a href="${req.baseUrl}/status/${redemption.redemptionId}">See the previous attempt</a></p>`,
          }),
        );
      }
      sendPage(res, 200, fieldsForm(req.baseUrl, { ...found, retry: redemption.status === 'failed' }));
    } catch (err) {
      const apiError = toApiError(err);
      if (apiError.status >= 500) throw err;
      sendPage(res, apiError.status, codeForm(req.baseUrl, { code, error: messageFor(apiError) }));
    }
  });

  router.post('/submit', postLimit, async (req, res) => {
    const code = str(req.body?.code);
    const redeemInfo: Record<string, unknown> = {};
    for (const [k, v] of Object.entries((req.body ?? {}) as Record<string, unknown>)) {
      if (k.startsWith(FIELD_PREFIX)) redeemInfo[k.slice(FIELD_PREFIX.length)] = v;
    }
    try {
      const submitted = await submitRedemption(deps(), { source: 'site' }, { code, redeemInfo });
      res.redirect(303, `${req.baseUrl}/status/${submitted.redemptionId}`);
    } catch (err) {
      const apiError = toApiError(err);
      if (apiError.status >= 500 && apiError.code !== 'session_validation_unavailable') throw err;
      if (
        apiError.code === 'invalid_code' ||
        apiError.code === 'test_code_only' ||
        apiError.code === 'already_redeemed'
      ) {
        return sendPage(res, apiError.status, codeForm(req.baseUrl, { code, error: messageFor(apiError) }));
      }
      const { productName, fields } = await productFieldsForCode(ctx.orm.em.fork(), code);
      const values = Object.fromEntries(Object.entries(redeemInfo).filter(([, v]) => typeof v === 'string')) as Record<
        string,
        string
      >;
      sendPage(
        res,
        apiError.status,
        fieldsForm(req.baseUrl, { code, productName, fields, values, error: apiError }),
        apiError.headers,
      );
    }
  });

  router.get('/status/:id', async (req, res) => {
    const view = await siteRedemptionStatus(ctx.orm.em.fork(), String(req.params.id));
    sendPage(res, 200, statusPage(req.baseUrl, view));
  });

  router.get('/status/:id/json', pollLimit, async (req, res) => {
    const view = await siteRedemptionStatus(ctx.orm.em.fork(), String(req.params.id));
    res.set({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }).json({
      redemptionId: view.redemptionId,
      status: view.status,
      retryable: view.retryable,
      failureCode: view.failureCode,
      fulfilledAt: view.fulfilledAt,
    });
  });

  router.get('/assets/status.js', (_req, res) => {
    res
      .set({
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=300',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(STATUS_SCRIPT);
  });

  // Errors the handlers did not turn into a form: a plain page (or JSON for the status poll).
  router.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const apiError = toApiError(err);
    if (apiError.status >= 500)
      ctx.logger.error({ err, requestId: res.locals.requestId }, 'redemption site request failed');
    if (req.path.endsWith('/json')) {
      res
        .status(apiError.status)
        .set(apiError.headers ?? {})
        .json(errorBody(apiError, res.locals.requestId));
      return;
    }
    const message =
      apiError.code === 'not_found'
        ? 'This page does not exist. Check the link, or enter your code again.'
        : messageFor(apiError);
    sendPage(res, apiError.status, codeForm(req.baseUrl, { error: message }), apiError.headers);
  });
  return router;
}
