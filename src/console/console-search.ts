import type { Router } from 'express';
import type { AppContext } from '../http/context';
import { listAudit } from '../services/accounts/audit';
import { desk, only } from './console-guard';
import { AuditQuery, SearchQuery } from './console-forms';
import { consolePage, html, send } from './console-layout';
import { auditTable } from './console-orders';
import { search } from './console-story';

// Finding things: one box for an order id, the reseller's own id, an account id or name, or a
// reseller's email. And the audit log, for admins, filtered by who, what and which id.

const AUDIT_PAGE = 50;

export function searchRoutes(router: Router, ctx: AppContext): void {
  router.get('/search', async (req, res) => {
    const d = desk(req, res, ctx);
    const { q } = SearchQuery.parse(req.query);
    const hits = q ? await search(d.em, q) : [];
    send(
      res,
      200,
      consolePage(d.viewer, {
        title: 'Search',
        section: 'search',
        body: html`<h1>Search</h1>
<form method="get" action="/console/search" class="action">
  <label for="q">Order id, the reseller's order id, account id or name, or a reseller's email</label>
  <input id="q" name="q" value="${q ?? ''}" maxlength="254" required data-testid="search-q">
  <button type="submit" data-testid="search">Search</button>
</form>
${
  q === undefined
    ? ''
    : hits.length === 0
      ? html`<p class="muted" data-testid="no-hits">Nothing matches.</p>`
      : html`<table data-testid="hits"><thead><tr><th>What</th><th>Id</th><th>Name / reseller's id</th><th></th></tr></thead>
<tbody>${hits.map(
          (h) => html`<tr data-testid="hit" data-kind="${h.kind}">
  <td>${h.kind}</td>
  <td><a class="code" href="${h.kind === 'order' ? `/console/orders/${h.id}` : `/console/accounts/${h.id}`}" data-testid="hit-link">${h.id}</a></td>
  <td>${h.label}</td><td class="muted">${h.detail}</td></tr>`,
        )}</tbody></table>`
}`,
      }),
    );
  });

  router.get('/audit', only('admin'), async (req, res) => {
    const d = desk(req, res, ctx);
    const f = AuditQuery.parse(req.query);
    const page = await listAudit(d.em, {
      actor: f.actor,
      action: f.action,
      id: f.id,
      beforeId: f.before,
      limit: AUDIT_PAGE,
    });
    const kept = Object.fromEntries(
      Object.entries({ actor: f.actor, action: f.action, id: f.id }).filter((e): e is [string, string] => !!e[1]),
    );
    send(
      res,
      200,
      consolePage(d.viewer, {
        title: 'Audit log',
        section: 'audit',
        body: html`<h1>Audit log</h1>
<p class="muted">Every console and admin-API action, newest first. Rows cannot be changed or deleted; "token" is the ADMIN_TOKEN.</p>
<form method="get" action="/console/audit" class="action">
  <label for="actor">Who <span class="hint">(name, email or token)</span></label><input id="actor" name="actor" value="${f.actor ?? ''}" data-testid="audit-filter-actor">
  <label for="action">Action <span class="hint">(e.g. order.deliver, or order. for all order actions)</span></label><input id="action" name="action" value="${f.action ?? ''}">
  <label for="id">Id <span class="hint">(order, redemption, key, delivery, staff member or account)</span></label><input id="id" name="id" value="${f.id ?? ''}">
  <button type="submit" data-testid="audit-filter">Filter</button>
</form>
${auditTable(page.items)}
<div class="pager">${
          page.nextBefore
            ? html`<a href="/console/audit?${new URLSearchParams({ ...kept, before: page.nextBefore }).toString()}" data-testid="older">Older</a>`
            : ''
        }</div>`,
      }),
    );
  });
}
