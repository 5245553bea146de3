import type { Request, Response, Router } from 'express';
import type { AppContext } from '../../http/context';
import { createNamedApiKey, listApiKeys, revokeApiKey, rotateApiKey, type KeyView } from '../../services/accounts';
import { html, type SafeHtml } from '../layout';
import { area, formError, noticeFrom, type Area } from './area';
import { IdParams, KeyForm } from './forms';
import { areaPage, csrfField, errorBox, noticeBox, plainMessage, send, when } from './layout';

// API keys (spec 5.2): self-service, no review, shown once. A new or rotated key appears in full
// only in the answer to the form that made it; afterwards lists show its prefix and last four
// characters. Revocation is immediate; rotation leaves the old key working for
// KEY_ROTATION_GRACE_SECONDS.

const NOTICES = { revoked: 'The key is revoked. Requests with it are now refused with 401 unauthorized.' };

function graceText(seconds: number): string {
  if (seconds < 3600) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? '' : 's'}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`;
  return `${seconds} seconds`;
}

function keyRow(k: KeyView, csrf: string) {
  return html`<tr data-testid="key-row" data-key-id="${k.id}">
  <td data-label="Name">${k.name ?? html`<span class="muted">(made by an operator)</span>`}</td>
  <td data-label="Key" class="code" data-testid="key-shown">${k.shown}</td>
  <td data-label="Created">${when(k.createdAt)}</td>
  <td data-label="Last used">${k.lastUsedAt ? when(k.lastUsedAt) : 'never'}</td>
  <td data-label="">${k.expiresAt
    ? html`<span class="muted" data-testid="key-expires">Rotated; works until ${when(k.expiresAt)}</span> `
    : html`<form method="post" action="/account/keys/${k.id}/rotate">${csrfField(csrf)}<button type="submit" class="secondary" data-testid="rotate">Rotate</button></form> `}
    <form method="post" action="/account/keys/${k.id}/revoke">${csrfField(csrf)}<button type="submit" class="danger" data-testid="revoke">Revoke</button></form></td>
</tr>`;
}

async function keysPage(a: Area, ctx: AppContext, opts: { created?: SafeHtml; error?: string; notice?: string; name?: string } = {}): Promise<string> {
  const keys = await listApiKeys(a.em, a.accountId);
  return areaPage({
    title: 'API keys',
    section: 'keys',
    email: a.email,
    csrf: a.csrf,
    body: html`<h1>API keys</h1>
<p class="muted">Keys authenticate the REST API and the MCP endpoint (<span class="code">Authorization: Bearer wsk_…</span>).
Rotating a key keeps the old one working for ${graceText(ctx.config.KEY_ROTATION_GRACE_SECONDS)}; revoking stops it at once.</p>
${noticeBox(opts.notice)}${opts.created}
${errorBox(opts.error)}
<form method="post" action="/account/keys" class="inline-form">
  ${csrfField(a.csrf)}
  <div><label for="name">Key name</label><input id="name" name="name" maxlength="64" placeholder="production server" value="${opts.name ?? ''}" required></div>
  <div><button type="submit" data-testid="create-key">Create key</button></div>
</form>
<h2>Active keys</h2>
${keys.length === 0
      ? html`<p class="muted" data-testid="no-keys">No active keys.</p>`
      : html`<table class="cards"><thead><tr><th>Name</th><th>Key</th><th>Created</th><th>Last used</th><th></th></tr></thead>
<tbody>${keys.map((k) => keyRow(k, a.csrf))}</tbody></table>`}`,
  });
}

/** The one time a key is shown in full. */
const shownOnce = (apiKey: string, what: string, extra?: SafeHtml) => html`<div class="notice" role="status">
  <p><strong>${what}</strong> Copy it now: it is shown only this once and cannot be recovered.</p>
  <p class="secret" data-testid="new-key">${apiKey}</p>${extra}
</div>`;

export function keyRoutes(router: Router, ctx: AppContext): void {
  router.get('/keys', async (req, res) => {
    send(res, 200, await keysPage(area(req, res, ctx), ctx, { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/keys', async (req: Request, res: Response) => {
    const a = area(req, res, ctx);
    try {
      const { name } = KeyForm.parse(req.body ?? {});
      const { apiKey } = await createNamedApiKey(a.em, a.accountId, name.trim());
      send(res, 200, await keysPage(a, ctx, { created: shownOnce(apiKey, 'Your new API key.') }));
    } catch (err) {
      const e = formError(err);
      const name = typeof req.body?.name === 'string' ? req.body.name.slice(0, 64) : '';
      send(res, e.status, await keysPage(a, ctx, { name, error: plainMessage(e) }), e.headers);
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
    ctx.logger.info({ requestId: res.locals.requestId, accountId: a.accountId, keyId: id, newKeyId: rotated.key.id }, 'api key rotated');
    const extra = html`<p data-testid="rotation-grace">The old key keeps working until ${when(rotated.oldKeyExpiresAt)}, then stops.</p>`;
    send(res, 200, await keysPage(a, ctx, { created: shownOnce(rotated.apiKey, 'Your replacement key.', extra) }));
  });
}
