import type { Request, Response, Router } from 'express';
import type { AppContext } from '../../http/context';
import { DEFAULT_EVENTS, SUBSCRIBABLE_EVENTS } from '../../domain/event-types';
import { findDelivery } from '../../services/accounts/account-views';
import { urlPolicy } from '../../services/webhooks/webhook-endpoints';
import { resendDeliveries } from '../../services/webhooks/webhook-resend';
import {
  configureWebhook,
  getWebhook,
  listDeliveries,
  retryDelivery,
  sendTestEvent,
} from '../../services/webhooks/webhooks';
import { html, type SafeHtml } from '../page-layout';
import { area, formError, noticeFrom, type Area } from './account-area';
import { COPY_SCRIPT, copyButton } from './account-copy';
import { IdParams, ListQuery, ResendForm, WebhookForm } from './account-forms';
import { areaPage, csrfField, errorBox, noticeBox, plainMessage, send, when } from './account-layout';

// The webhook (spec 4.5) through the same services as PUT /webhook, POST /webhook/test and the
// delivery endpoints: the URL rules and the events it receives, the signing secret shown once on
// every change, a test event, the delivery log, a retry for deliveries that gave up, and a resend
// of every failed or cancelled delivery since a time.

/** Deliveries resent per form: as many as the API's resend takes per call. */
const RESEND_PAGE = 100;

const OPT_IN_NOTE: Record<string, string> = {
  'product.updated': " (a product's price at your level, its stock or its availability changed)",
  'balance.low': ' (your balance fell below the amount below)',
};

const DELIVERIES_PAGE = 25;

const NOTICES = {
  'test-sent': 'A webhook.test event was sent. Its delivery appears below; reload to follow it.',
  retried: 'The delivery is being attempted again.',
  cleared: 'The webhook is removed. No events are sent until you set a URL again.',
};

const STATUS_CLASS: Record<string, string> = { succeeded: 'fulfilled', failed: 'failed', cancelled: 'failed' };
const RETRYABLE = new Set(['failed', 'cancelled']);

type Delivery = Awaited<ReturnType<typeof findDelivery>>;

const retryForm = (d: Delivery, csrf: string) =>
  RETRYABLE.has(d.status)
    ? html`<form method="post" action="/account/webhook/deliveries/${d.id}/retry">${csrfField(csrf)}<button type="submit" data-testid="retry">Retry</button></form>`
    : '';

const statusBadge = (d: Delivery) =>
  html`<span class="status ${STATUS_CLASS[d.status] ?? ''}" data-testid="delivery-status">${d.status}</span>`;

function eventsFieldset(events: readonly string[], threshold: string) {
  return html`<input type="hidden" name="subscription" value="1">
<fieldset class="events"><legend>Events to send</legend>
  ${SUBSCRIBABLE_EVENTS.map((e) => html`<label class="check"><input type="checkbox" name="events" value="${e}"${events.includes(e) ? html` checked` : ''} data-testid="event-${e}"> <span><span class="code">${e}</span>${OPT_IN_NOTE[e] ?? ''}</span></label>`)}
  <label for="balanceLowThreshold">Balance below <span class="hint">(for balance.low, e.g. 100.00)</span></label>
  <input id="balanceLowThreshold" name="balanceLowThreshold" inputmode="decimal" maxlength="20" value="${threshold}" data-testid="balance-low-threshold">
</fieldset>`;
}

const resendForm = (
  csrf: string,
) => html`<form method="post" action="/account/webhook/resend" class="inline-form" style="margin-bottom:1rem">
  ${csrfField(csrf)}
  <div><label for="since">Resend failed and cancelled deliveries since <span class="hint">(UTC)</span></label>
    <input id="since" name="since" type="datetime-local" required data-testid="resend-since"></div>
  <div><button type="submit" class="secondary" data-testid="resend">Resend</button></div>
</form>`;

const WEBHOOK_STYLE = html`<style>
fieldset.events { border: 1px solid var(--line); border-radius: 8px; margin: 1rem 0 0; padding: .25rem .75rem .75rem; }
</style>`;

async function webhookPage(
  a: Area,
  ctx: AppContext,
  opts: { cursor?: string; secret?: SafeHtml; error?: string; notice?: string; url?: string } = {},
): Promise<string> {
  const { url, events, balanceLowThreshold } = await getWebhook(a.em, a.accountId);
  const page = await listDeliveries(a.em, {
    accountId: a.accountId,
    limit: DELIVERIES_PAGE,
    cursor: opts.cursor,
    cursorSecret: ctx.config.CURSOR_SECRET,
  });
  return areaPage({
    title: 'Webhook',
    section: 'webhook',
    email: a.email,
    csrf: a.csrf,
    scripts: opts.secret ? [COPY_SCRIPT] : [],
    body: html`${WEBHOOK_STYLE}<h1>Webhook</h1>
<p class="muted">Signed POST requests for delivery, top-up and redemption events, and for the events you choose below. Each save makes a new signing secret.</p>
${noticeBox(opts.notice)}${opts.secret}${errorBox(opts.error)}
<form method="post" action="/account/webhook">
  ${csrfField(a.csrf)}
  <label for="url">Webhook URL</label><input id="url" name="url" type="url" maxlength="2048" placeholder="https://example.com/hooks/wholesale"
    value="${opts.url ?? url}" data-testid="webhook-url">
  ${eventsFieldset(events ?? DEFAULT_EVENTS, balanceLowThreshold ?? '')}
  <button type="submit" data-testid="save-webhook">Save</button>
</form>
${
  url
    ? html`<div class="inline-form" style="margin-top:1rem">
  <form method="post" action="/account/webhook/test">${csrfField(a.csrf)}<button type="submit" data-testid="send-test">Send a test event</button></form>
  <form method="post" action="/account/webhook">${csrfField(a.csrf)}<input type="hidden" name="url" value=""><button type="submit" class="danger" data-testid="clear-webhook">Remove webhook</button></form>
</div>`
    : html`<p class="muted" data-testid="no-webhook">No webhook is set.</p>`
}
<h2>Deliveries</h2>
${url ? resendForm(a.csrf) : ''}
${
  page.items.length === 0
    ? html`<p class="muted" data-testid="no-deliveries">No deliveries yet.</p>`
    : html`<table class="cards" data-testid="deliveries"><thead><tr><th>Event</th><th>Status</th><th class="num">Attempts</th><th>Last answer</th><th>Created</th><th></th></tr></thead>
<tbody>${page.items.map(
        (d) => html`<tr data-testid="delivery-row" data-delivery-id="${d.id}">
  <td data-label="Event"><a href="/account/webhook/deliveries/${d.id}">${d.event}</a></td>
  <td data-label="Status">${statusBadge(d)}</td>
  <td data-label="Attempts" class="num" data-testid="delivery-attempts">${d.attempts}</td>
  <td data-label="Last answer">${d.lastStatusCode ?? d.lastError ?? '—'}</td>
  <td data-label="Created">${when(d.createdAt)}</td>
  <td data-label="">${retryForm(d, a.csrf)}</td>
</tr>`,
      )}</tbody></table>`
}
<div class="pager">${opts.cursor ? html`<a href="/account/webhook">Newest</a>` : ''}${
      page.nextCursor ? html`<a href="/account/webhook?cursor=${page.nextCursor}" data-testid="older">Older</a>` : ''
    }</div>`,
  });
}

export function webhookRoutes(router: Router, ctx: AppContext): void {
  const policy = urlPolicy(ctx.config);
  const deps = (a: Area) => ({ em: a.em, temporal: ctx.temporal, config: ctx.config });

  router.get('/webhook', async (req, res) => {
    const { cursor } = ListQuery.parse(req.query);
    send(res, 200, await webhookPage(area(req, res, ctx), ctx, { cursor, notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/webhook', async (req: Request, res: Response) => {
    const a = area(req, res, ctx);
    try {
      const form = WebhookForm.parse(req.body ?? {});
      const subscription = form.subscription
        ? { events: [form.events ?? []].flat(), balanceLowThreshold: form.balanceLowThreshold || null }
        : undefined;
      const configured = await configureWebhook(a.em, a.accountId, form.url, { policy, subscription });
      if (!configured.secret) return res.redirect(303, '/account/webhook?notice=cleared');
      const secret = html`<div class="notice" role="status"><p><strong>Webhook saved.</strong> Its signing secret, shown only this once:</p>
<div class="secret-row"><p class="secret" id="webhook-secret" data-testid="webhook-secret">${configured.secret}</p>${copyButton('webhook-secret', 'copy-secret')}</div>
<p class="muted">Check each request's signature with it (HMAC-SHA256 of the raw body). Saving the URL again makes a new secret.</p></div>`;
      send(res, 200, await webhookPage(a, ctx, { secret }));
    } catch (err) {
      const e = formError(err);
      const url = typeof req.body?.url === 'string' ? req.body.url.slice(0, 2048) : '';
      send(res, e.status, await webhookPage(a, ctx, { url, error: plainMessage(e) }), e.headers);
    }
  });

  router.post('/webhook/test', async (req, res) => {
    const a = area(req, res, ctx);
    try {
      await sendTestEvent(
        {
          ...deps(a),
          onStartError: (err) => ctx.logger.warn({ err }, 'webhook.test delivery left for the reconciler'),
        },
        a.accountId,
      );
      res.redirect(303, '/account/webhook?notice=test-sent');
    } catch (err) {
      const e = formError(err);
      send(res, e.status, await webhookPage(a, ctx, { error: plainMessage(e) }));
    }
  });

  router.post('/webhook/resend', async (req: Request, res: Response) => {
    const a = area(req, res, ctx);
    try {
      const { since } = ResendForm.parse(req.body ?? {});
      const r = await resendDeliveries(
        {
          ...deps(a),
          onStartError: (err) => ctx.logger.warn({ err }, 'resent webhook delivery left for the reconciler'),
        },
        a.accountId,
        { since, limit: RESEND_PAGE },
      );
      const notice =
        r.resent === 0
          ? 'No failed or cancelled deliveries since then.'
          : `${r.resent} ${r.resent === 1 ? 'delivery is' : 'deliveries are'} being sent again.${r.hasMore ? ' There are more: resend again for the next ones.' : ''}`;
      send(res, 200, await webhookPage(a, ctx, { notice }));
    } catch (err) {
      const e = formError(err);
      send(res, e.status, await webhookPage(a, ctx, { error: plainMessage(e) }), e.headers);
    }
  });

  router.get('/webhook/deliveries/:id', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const d = await findDelivery(a.em, a.accountId, id);
    send(
      res,
      200,
      areaPage({
        title: `Delivery ${d.id}`,
        section: 'webhook',
        email: a.email,
        csrf: a.csrf,
        body: html`<h1>Delivery <span class="code">${d.id}</span></h1>
<dl>
  <dt>Event</dt><dd>${d.event} <span class="code muted">${d.eventId}</span></dd>
  <dt>Status</dt><dd>${statusBadge(d)}</dd>
  <dt>Attempts</dt><dd data-testid="delivery-attempts">${d.attempts}</dd>
  <dt>Last status code</dt><dd>${d.lastStatusCode ?? '—'}</dd>
  <dt>Last error</dt><dd>${d.lastError ?? '—'}</dd>
  <dt>Next attempt</dt><dd>${when(d.nextAttemptAt)}</dd>
  <dt>Created</dt><dd>${when(d.createdAt)}</dd>
  <dt>Updated</dt><dd>${when(d.updatedAt)}</dd>
</dl>
${retryForm(d, a.csrf)}
<p><a href="/account/webhook">All deliveries</a></p>`,
      }),
    );
  });

  router.post('/webhook/deliveries/:id/retry', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    await retryDelivery(deps(a), a.accountId, id);
    res.redirect(303, '/account/webhook?notice=retried');
  });
}
