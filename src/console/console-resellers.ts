import type { Request, Response, Router } from 'express';
import { ApiError } from '../domain/errors';
import { isUuid } from '../domain/redeem-info';
import type { AppContext } from '../http/context';
import { formError, noticeFrom } from '../pages/account/account-area';
import { accountSummary } from '../services/accounts/account-views';
import { listApiKeys, revokeApiKey } from '../services/accounts/accounts';
import { adjustBalance } from '../services/payments/admin';
import { listAudit } from '../services/accounts/audit';
import { listOrders, listTransactions } from '../services/orders/order-queries';
import { listDeliveries, retryDelivery } from '../services/webhooks/webhooks';
import { act, desk, only, type Desk } from './console-guard';
import { AccountItemParams, AdjustForm, IdParams, ReasonForm } from './console-forms';
import {
  consolePage,
  csrfField,
  errorBox,
  html,
  noticeBox,
  plainMessage,
  reasonField,
  send,
  when,
} from './console-layout';
import { auditTable } from './console-orders';
import { accountHeader } from './console-story';

// A reseller as support sees it: balance and level, the ledger, orders, API keys and webhook
// deliveries, newest first. Support retries a delivery; an admin revokes a key or adjusts the
// balance (an `adjust` ledger row). Each goes through the service the reseller's own API, the
// admin API or the CLI uses, and asks for a reason.

const LIST = 25;
const NOTICES = {
  revoked: 'The key is revoked.',
  retried: 'The delivery is being attempted again.',
  adjusted: 'The balance is adjusted.',
};
const RETRYABLE = new Set(['failed', 'cancelled']);

async function resellerPage(
  d: Desk,
  ctx: AppContext,
  accountId: string,
  opts: { notice?: string; error?: string } = {},
): Promise<string> {
  const header = await accountHeader(d.em, accountId);
  if (!header) throw new ApiError('not_found', `No account ${accountId}`);
  const secret = ctx.config.CURSOR_SECRET;
  const summary = await accountSummary(d.em, accountId, ctx.config.LEVEL_THRESHOLDS);
  const ledger = await listTransactions(d.em, { accountId, limit: LIST, cursorSecret: secret });
  const orders = await listOrders(d.em, {
    accountId,
    limit: LIST,
    baseUrl: ctx.config.publicBaseUrl,
    cursorSecret: secret,
  });
  const keys = await listApiKeys(d.em, accountId);
  const deliveries = await listDeliveries(d.em, { accountId, limit: LIST, cursorSecret: secret });
  const audit = await listAudit(d.em, { id: accountId, limit: 20 });
  const base = `/console/accounts/${accountId}`;
  return consolePage(d.viewer, {
    title: `Reseller ${header.name}`,
    body: html`<h1>${header.name}</h1>
<p class="muted"><span class="code">${accountId}</span> · ${header.email ?? 'no sign-in user'}</p>
${noticeBox(opts.notice)}${errorBox(opts.error)}
<dl><dt>Balance</dt><dd data-testid="balance">${summary.balance} USDT</dd><dt>Level</dt><dd>Lv${summary.level}</dd>
<dt>Spending</dt><dd>${summary.cumulativeSpending} USDT</dd></dl>
${
  d.may('admin')
    ? html`<form method="post" action="${base}/adjust" class="action">${csrfField(d.viewer.csrf)}
  <label for="amount">Adjust the balance by <span class="hint">(negative to take away)</span></label>
  <input id="amount" name="amount" inputmode="decimal" placeholder="12.50" required data-testid="adjust-amount">
  ${reasonField('adjust-reason')}<button type="submit" data-testid="adjust">Adjust balance</button></form>`
    : ''
}
<h2>Ledger <span class="muted">(newest ${LIST})</span></h2>
<table data-testid="ledger"><thead><tr><th>When</th><th>Type</th><th class="num">Amount</th><th class="num">Balance after</th><th>Order</th><th>Note</th></tr></thead>
<tbody>${ledger.items.map(
      (
        t,
      ) => html`<tr data-testid="ledger-row"><td>${when(t.created_at)}</td><td data-testid="ledger-type">${t.type}</td>
<td class="num" data-testid="ledger-amount">${t.amount}</td><td class="num">${t.balanceAfter}</td>
<td>${t.order_id ? html`<a href="/console/orders/${t.order_id}">${t.order_id}</a>` : '—'}</td><td>${t.note ?? ''}</td></tr>`,
    )}</tbody></table>
<h2>Orders <span class="muted">(newest ${LIST})</span></h2>
<table data-testid="orders"><thead><tr><th>Order</th><th>Reseller's id</th><th>Product</th><th class="num">Qty</th><th class="num">Amount</th><th>Status</th></tr></thead>
<tbody>${orders.items.map(
      (
        o,
      ) => html`<tr><td><a href="/console/orders/${o.id}" class="code">${o.id}</a></td><td class="code">${o.external_order_id ?? '—'}</td>
<td>${o.product_id ?? '—'}</td><td class="num">${o.qty}</td><td class="num">${o.amount}</td><td>${o.status}${o.fulfillmentStatus ? ` · ${o.fulfillmentStatus}` : ''}</td></tr>`,
    )}</tbody></table>
<h2>API keys</h2>
${
  keys.length === 0
    ? html`<p class="muted">No active keys.</p>`
    : html`<table data-testid="keys"><thead><tr><th>Name</th><th>Key</th><th>Created</th><th>Last used</th><th></th></tr></thead>
<tbody>${keys.map(
        (
          k,
        ) => html`<tr data-testid="key-row"><td>${k.name ?? '—'}</td><td class="code">${k.shown}</td><td>${when(k.createdAt)}</td><td>${k.lastUsedAt ? when(k.lastUsedAt) : 'never'}</td>
<td>${
          d.may('admin')
            ? html`<form method="post" action="${base}/keys/${k.id}/revoke">${csrfField(d.viewer.csrf)}${reasonField(`revoke-reason-${k.id}`)}<button type="submit" class="danger" data-testid="revoke">Revoke</button></form>`
            : ''
        }</td></tr>`,
      )}</tbody></table>`
}
<h2>Webhook deliveries <span class="muted">(newest ${LIST})</span></h2>
${
  deliveries.items.length === 0
    ? html`<p class="muted">No deliveries.</p>`
    : html`<table data-testid="deliveries"><thead><tr><th>Event</th><th>Status</th><th class="num">Attempts</th><th>Last answer</th><th>Created</th><th></th></tr></thead>
<tbody>${deliveries.items.map(
        (
          w,
        ) => html`<tr data-testid="delivery-row"><td>${w.event}</td><td>${w.status}</td><td class="num">${w.attempts}</td>
<td>${w.lastStatusCode ?? w.lastError ?? '—'}</td><td>${when(w.createdAt)}</td>
<td>${
          d.may('support') && RETRYABLE.has(w.status)
            ? html`<form method="post" action="${base}/deliveries/${w.id}/retry">${csrfField(d.viewer.csrf)}${reasonField(`retry-reason-${w.id}`)}<button type="submit" data-testid="retry">Retry</button></form>`
            : ''
        }</td></tr>`,
      )}</tbody></table>`
}
<h2>Audit log</h2>
${auditTable(audit.items)}`,
  });
}

export function resellerRoutes(router: Router, ctx: AppContext): void {
  const accountOf = (req: Request) => {
    const { id } = IdParams.parse(req.params);
    if (!isUuid(id)) throw new ApiError('not_found', `No account ${id}`);
    return id;
  };

  router.get('/accounts/:id', async (req, res) => {
    send(res, 200, await resellerPage(desk(req, res, ctx), ctx, accountOf(req), { notice: noticeFrom(req, NOTICES) }));
  });

  /** An action on the page: run it, then back to the page with a notice, or the page with the error. */
  const onPage =
    (notice: keyof typeof NOTICES, run: (d: Desk, accountId: string, req: Request) => Promise<unknown>) =>
    async (req: Request, res: Response) => {
      const d = desk(req, res, ctx);
      const accountId = accountOf(req);
      try {
        await run(d, accountId, req);
        res.redirect(303, `/console/accounts/${accountId}?notice=${notice}`);
      } catch (err) {
        const e = formError(err);
        send(
          res,
          e.status,
          await resellerPage({ ...d, em: d.em.fork() }, ctx, accountId, { error: plainMessage(e) }),
          e.headers,
        );
      }
    };

  router.post(
    '/accounts/:id/adjust',
    only('admin'),
    onPage('adjusted', async (d, accountId, req) => {
      const form = AdjustForm.parse(req.body ?? {});
      await act(
        d,
        {
          action: 'balance.adjust',
          subjectId: accountId,
          accountId,
          reason: form.reason,
          details: { amount: form.amount },
        },
        () =>
          adjustBalance(d.em, {
            accountId,
            amount: form.amount,
            note: form.reason,
            levelThresholds: ctx.config.LEVEL_THRESHOLDS,
          }),
      );
    }),
  );

  router.post(
    '/accounts/:id/keys/:itemId/revoke',
    only('admin'),
    onPage('revoked', async (d, accountId, req) => {
      const { itemId } = AccountItemParams.parse(req.params);
      const { reason } = ReasonForm.parse(req.body ?? {});
      await act(d, { action: 'key.revoke', subjectId: itemId, accountId, reason }, () =>
        revokeApiKey(d.em, accountId, itemId),
      );
    }),
  );

  router.post(
    '/accounts/:id/deliveries/:itemId/retry',
    only('support'),
    onPage('retried', async (d, accountId, req) => {
      const { itemId } = AccountItemParams.parse(req.params);
      const { reason } = ReasonForm.parse(req.body ?? {});
      await act(d, { action: 'webhook.retry', subjectId: itemId, accountId, reason }, () =>
        retryDelivery({ em: d.em, temporal: ctx.temporal, config: ctx.config }, accountId, itemId),
      );
    }),
  );
}
