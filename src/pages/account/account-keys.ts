import type { Request, Response, Router } from 'express';
import type { AppContext } from '../../http/context';
import { KEY_SCOPES } from '../../domain/key-scopes';
import {
  createNamedApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  type KeyView,
} from '../../services/accounts/accounts';
import { keyLimits, NO_LIMITS } from '../../services/accounts/key-access';
import { html, type SafeHtml } from '../page-layout';
import { area, formError, noticeFrom, type Area } from './account-area';
import { COPY_SCRIPT, copyButton } from './account-copy';
import { IdParams, KeyForm } from './account-forms';
import { areaPage, csrfField, errorBox, noticeBox, plainMessage, send, when } from './account-layout';

// API keys (spec 5.2): self-service, no review, shown once. A new or rotated key appears in full
// only in the answer to the form that made it, with a Copy button; afterwards lists show its
// prefix and last four characters, and what it may do: its scopes, the networks it may be used
// from and its expiry. Revocation is immediate; rotation leaves the old key working for
// KEY_ROTATION_GRACE_SECONDS, and the new one has the old one's limits.

const SCOPE_TEXT: Record<(typeof KEY_SCOPES)[number], string> = {
  read: 'read: products, balance, orders, ledger, redemptions, batches; make exports',
  orders: 'orders: place orders and batches',
  topups: 'topups: top up the balance',
  redemptions: 'redemptions: submit codes for redemption',
  webhooks: 'webhooks: set the webhook, send tests, resend deliveries',
};

/** What the form had, to show it again after an error. */
interface KeyFormValues {
  name: string;
  scopes: string[];
  cidrs: string;
  expires: string;
}

const NOTICES = { revoked: 'The key is revoked. Requests with it are now refused with 401 unauthorized.' };

function graceText(seconds: number): string {
  if (seconds < 3600) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? '' : 's'}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`;
  return `${seconds} seconds`;
}

const allScopes = (k: KeyView) => k.scopes.length === KEY_SCOPES.length;

function keyRow(k: KeyView, csrf: string) {
  return html`<tr data-testid="key-row" data-key-id="${k.id}">
  <td data-label="Name">${k.name ?? html`<span class="muted">(made by an operator)</span>`}</td>
  <td data-label="Key" class="code" data-testid="key-shown">${k.shown}</td>
  <td data-label="Scopes" data-testid="key-scopes">${allScopes(k) ? html`all <span class="muted">(${k.scopes.join(', ')})</span>` : k.scopes.join(', ')}</td>
  <td data-label="From" data-testid="key-cidrs">${k.cidrs.length ? k.cidrs.join(', ') : html`<span class="muted">anywhere</span>`}</td>
  <td data-label="Expires" data-testid="key-valid-until">${
    k.validUntil
      ? html`${when(k.validUntil)}${k.expired ? html` <span class="status failed" data-testid="key-expired">expired</span>` : ''}`
      : html`<span class="muted">never</span>`
  }</td>
  <td data-label="Created">${when(k.createdAt)}</td>
  <td data-label="Last used">${k.lastUsedAt ? when(k.lastUsedAt) : 'never'}</td>
  <td data-label="">${
    k.expiresAt
      ? html`<span class="muted" data-testid="key-expires">Rotated; works until ${when(k.expiresAt)}</span> `
      : html`<form method="post" action="/account/keys/${k.id}/rotate">${csrfField(csrf)}<button type="submit" class="secondary" data-testid="rotate">Rotate</button></form> `
  }
    <form method="post" action="/account/keys/${k.id}/revoke">${csrfField(csrf)}<button type="submit" class="danger" data-testid="revoke">Revoke</button></form></td>
</tr>`;
}

function keyForm(csrf: string, v: KeyFormValues) {
  return html`<form method="post" action="/account/keys" data-testid="key-form">
  ${csrfField(csrf)}<input type="hidden" name="limits" value="1">
  <div class="inline-form">
    <div><label for="name">Key name</label><input id="name" name="name" maxlength="64" placeholder="production server" value="${v.name}" required></div>
    <div><label for="expires">Expires <span class="hint">(optional; at the start of that day, UTC)</span></label><input id="expires" name="expires" type="date" value="${v.expires}" data-testid="key-expires-input"></div>
  </div>
  <fieldset class="scopes"><legend>Scopes <span class="hint">(what the key may do)</span></legend>
    ${KEY_SCOPES.map((s) => html`<label class="check"><input type="checkbox" name="scopes" value="${s}"${v.scopes.includes(s) ? html` checked` : ''} data-testid="scope-${s}"> ${SCOPE_TEXT[s]}</label>`)}
  </fieldset>
  <label for="cidrs">Use only from <span class="hint">(optional; networks like 203.0.113.0/24, separated by spaces or commas; empty: anywhere)</span></label>
  <input id="cidrs" name="cidrs" maxlength="2000" placeholder="203.0.113.0/24" value="${v.cidrs}" data-testid="key-cidrs-input">
  <button type="submit" data-testid="create-key">Create key</button>
</form>`;
}

const KEY_STYLE = html`<style>
fieldset.scopes { border: 1px solid var(--line); border-radius: 8px; margin: 1rem 0 0; padding: .25rem .75rem .5rem; }
@media (min-width: 641px) {
  table.keys th { white-space: nowrap; }
  table.keys td { overflow-wrap: normal; }
  table.keys td.code { overflow-wrap: anywhere; }
}
</style>`;

async function keysPage(
  a: Area,
  ctx: AppContext,
  opts: { created?: SafeHtml; error?: string; notice?: string; form?: KeyFormValues } = {},
): Promise<string> {
  const keys = await listApiKeys(a.em, a.accountId);
  const form = opts.form ?? { name: '', scopes: [...KEY_SCOPES], cidrs: '', expires: '' };
  return areaPage({
    title: 'API keys',
    section: 'keys',
    email: a.email,
    csrf: a.csrf,
    scripts: opts.created ? [COPY_SCRIPT] : [],
    body: html`${KEY_STYLE}<h1>API keys</h1>
<p class="muted">Keys authenticate the REST API and the MCP endpoint (<span class="code">Authorization: Bearer wsk_…</span>).
Rotating a key keeps the old one working for ${graceText(ctx.config.KEY_ROTATION_GRACE_SECONDS)}; revoking stops it at once.</p>
${noticeBox(opts.notice)}${opts.created}
${errorBox(opts.error)}
${keyForm(a.csrf, form)}
<h2>Active keys</h2>
${
  keys.length === 0
    ? html`<p class="muted" data-testid="no-keys">No active keys.</p>`
    : html`<table class="cards keys"><thead><tr><th>Name</th><th>Key</th><th>Scopes</th><th>From</th><th>Expires</th><th>Created</th><th>Last used</th><th></th></tr></thead>
<tbody>${keys.map((k) => keyRow(k, a.csrf))}</tbody></table>`
}`,
  });
}

/** The one time a key is shown in full. */
const shownOnce = (apiKey: string, what: string, extra?: SafeHtml) => html`<div class="notice" role="status">
  <p><strong>${what}</strong> Copy it now: it is shown only this once and cannot be recovered.</p>
  <div class="secret-row"><p class="secret" id="new-key" data-testid="new-key">${apiKey}</p>${copyButton('new-key', 'copy-key')}</div>${extra}
</div>`;

/** The form's values as given, to show them again after a refusal. */
function formValues(body: Record<string, unknown>): KeyFormValues {
  const text = (v: unknown, max: number) => (typeof v === 'string' ? v.slice(0, max) : '');
  const scopes = Array.isArray(body.scopes) ? body.scopes : [body.scopes];
  return {
    name: text(body.name, 64),
    scopes: scopes.filter((s): s is string => typeof s === 'string'),
    cidrs: text(body.cidrs, 2000),
    expires: text(body.expires, 32),
  };
}

export function keyRoutes(router: Router, ctx: AppContext): void {
  router.get('/keys', async (req, res) => {
    send(res, 200, await keysPage(area(req, res, ctx), ctx, { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/keys', async (req: Request, res: Response) => {
    const a = area(req, res, ctx);
    try {
      const form = KeyForm.parse(req.body ?? {});
      const limits = form.limits
        ? keyLimits({ scopes: [form.scopes ?? []].flat(), cidrs: form.cidrs?.split(/[\s,]+/), expires: form.expires })
        : NO_LIMITS;
      const { apiKey } = await createNamedApiKey(a.em, a.accountId, form.name.trim(), limits);
      send(res, 200, await keysPage(a, ctx, { created: shownOnce(apiKey, 'Your new API key.') }));
    } catch (err) {
      const e = formError(err);
      send(
        res,
        e.status,
        await keysPage(a, ctx, { form: formValues(req.body ?? {}), error: plainMessage(e) }),
        e.headers,
      );
    }
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    await revokeApiKey(a.em, a.accountId, id);
    ctx.logger.info({ requestId: res.locals.requestId, accountId: a.accountId, keyId: id }, 'api key revoked');
    res.redirect(303, '/account/keys?notice=revoked');
  });

  router.post('/keys/:id/rotate', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const rotated = await rotateApiKey(a.em, a.accountId, id, ctx.config.KEY_ROTATION_GRACE_SECONDS);
    ctx.logger.info(
      { requestId: res.locals.requestId, accountId: a.accountId, keyId: id, newKeyId: rotated.key.id },
      'api key rotated',
    );
    const extra = html`<p data-testid="rotation-grace">The old key keeps working until ${when(rotated.oldKeyExpiresAt)}, then stops.</p>`;
    send(res, 200, await keysPage(a, ctx, { created: shownOnce(rotated.apiKey, 'Your replacement key.', extra) }));
  });
}
