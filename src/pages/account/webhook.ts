import type { Request, Response, Router } from 'express';
import type { AppContext } from '../../http/context';
import { findDelivery } from '../../services/account-views';
import { urlPolicy } from '../../services/webhook-endpoints';
import { configureWebhook, getWebhook, listDeliveries, retryDelivery, sendTestEvent } from '../../services/webhooks';
import { html, type SafeHtml } from '../layout';
import { area, formError, noticeFrom, type Area } from './area';
import { IdParams, ListQuery, WebhookForm } from './forms';
import { areaPage, csrfField, errorBox, noticeBox, plainMessage, send, when } from './layout';

// The webhook (spec 4.5) through the same services as PUT /webhook, POST /webhook/test and the
// delivery endpoints: the URL rules, the signing secret shown once on every change, a test
// event, the delivery log and a retry for deliveries that gave up.

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

const statusBadge = (d: Delivery) => html`<span class="status ${STATUS_CLASS[d.status] ?? ''}" data-testid="delivery-status">${d.status}</span>`;

async function webhookPage(
  a: Area,
  ctx: AppContext,
  opts: { cursor?: string; secret?: SafeHtml; error?: string; notice?: string; url?: string } = {},
): Promise<string> {
  const { url } = await getWebhook(a.em, a.accountId);
  const page = await listDeliveries(a.em, { accountId: a.accountId, limit: DELIVERIES_PAGE, cursor: opts.cursor, cursorSecret: ctx.config.CURSOR_SECRET });
  return areaPage({
    title: 'Webhook',
    section: 'webhook',
    email: a.email,
    csrf: a.csrf,
    body: html`<h1>Webhook</h1>
<p class="muted">Signed POST requests for delivery, top-up and redemption events. Each change of the URL makes a new signing secret.</p>
${noticeBox(opts.notice)}${opts.secret}${errorBox(opts.error)}
<form method="post" action="/account/webhook" class="inline-form">
  ${csrfField(a.csrf)}
  <div><label for="url">Webhook URL</label><input id="url" name="url" type="url" maxlength="2048" placeholder="https://example.com/hooks/wholesale"
    value="${opts.url ?? url}" data-testid="webhook-url"></div>
  <div><button type="submit" data-testid="save-webhook">Save</button></div>
</form>
${url
      ? html`<div class="inline-form" style="margin-top:1rem">
  <form method="post" action="/account/webhook/test">${csrfField(a.csrf)}<button type="submit" data-testid="send-test">Send a test event</button></form>
  <form method="post" action="/account/webhook">${csrfField(a.csrf)}<input type="hidden" name="url" value=""><button type="submit" class="danger" data-testid="clear-webhook">Remove webhook</button></form>
</div>`
      : html`<p class="muted" data-testid="no-webhook">No webhook is set.</p>`}
<h2>Deliveries</h2>
${page.items.length === 0
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
      )}</tbody></table>`}
<div class="pager">${opts.cursor ? html`<a href="/account/webhook">Newest</a>` : ''}${page.nextCursor
      ? html`<a href="/account/webhook?cursor=${page.nextCursor}" data-testid="older">Older</a>`
      : ''}</div>`,
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
      const { url } = WebhookForm.parse(req.body ?? {});
      const configured = await configureWebhook(a.em, a.accountId, url, { policy });
      if (!configured.secret) return res.redirect(303, '/account/webhook?notice=cleared');
      const secret = html`<div class="notice" role="status"><p><strong>Webhook saved.</strong> Its signing secret, shown only this once:</p>
<p class="secret" data-testid="webhook-secret">${configured.secret}</p>
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
      await sendTestEvent({ ...deps(a), onStartError: (err) => ctx.logger.warn({ err }, 'webhook.test delivery left for the reconciler') }, a.accountId);
      res.redirect(303, '/account/webhook?notice=test-sent');
    } catch (err) {
      const e = formError(err);
      send(res, e.status, await webhookPage(a, ctx, { error: plainMessage(e) }));
    }
  });

  router.get('/webhook/deliveries/:id', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const d = await findDelivery(a.em, a.accountId, id);
    send(res, 200, areaPage({
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
    }));
  });

  router.post('/webhook/deliveries/:id/retry', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    await retryDelivery(deps(a), a.accountId, id);
    res.redirect(303, '/account/webhook?notice=retried');
  });
}
