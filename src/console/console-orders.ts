import type { Request, Response, Router } from 'express';
import type { Order } from '../db/entities/all-entities';
import { supportActionsOf } from '../db/support-store';
import { deliveriesOfOrder } from '../db/webhooks-store';
import type { AppContext } from '../http/context';
import { formError, noticeFrom } from '../pages/account/account-area';
import { actorLabel, listAudit, type AuditView } from '../services/accounts/audit';
import { findOrder as findOrderById, orderSummary } from '../services/orders/orders';
import {
  deliverOrder,
  listSupportOrders,
  refundOrder,
  resumeOrder,
  supportOrderDetail,
} from '../services/supply/support';
import { act, desk, only, type Desk } from './console-guard';
import { DeliverForm, IdParams, ReasonForm } from './console-forms';
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
  type SafeHtml,
} from './console-layout';
import { procurementStates, temporalUiUrl, workflowsOf } from './console-story';

// The needs_attention queue (Postgres, with each procurement workflow's `state` query beside it)
// and an order's whole story: placement, payment, supplier rounds and answers, webhook deliveries,
// support actions and audit rows, with links to its workflows in the Temporal UI. Support acts
// from here (resume, deliver pasted codes, refund), through the services of the admin API and CLI.

const NOTICES = {
  resume: 'Resumed: the supplier is asked again.',
  deliver: 'Delivered with the pasted codes.',
  refund: 'Refunded the undelivered units to the balance.',
};
const ACTIONS = { resume: resumeOrder, refund: refundOrder } as const;

const wfLink = (ctx: AppContext, id: string) =>
  html`<a href="${temporalUiUrl(ctx.config, id)}" rel="noreferrer" target="_blank" data-testid="temporal-link">${id}</a>`;

export function auditTable(rows: AuditView[]): SafeHtml {
  if (rows.length === 0) return html`<p class="muted" data-testid="no-audit">No audit rows.</p>`;
  return html`<table data-testid="audit"><thead><tr><th>When</th><th>Who</th><th>Action</th><th>On</th><th>Reason</th><th>Request</th><th>Outcome</th></tr></thead>
<tbody>${rows.map(
    (r) => html`<tr data-testid="audit-row">
  <td>${when(r.at)}</td><td data-testid="audit-actor">${r.actor} <span class="role">${r.role}</span>${r.actorEmail ? html`<br><span class="muted">${r.actorEmail}</span>` : ''}</td>
  <td data-testid="audit-action">${r.action}</td>
  <td class="code">${r.subjectId ?? '—'}${r.accountId && r.accountId !== r.subjectId ? html`<br><a href="/console/accounts/${r.accountId}">${r.accountId}</a>` : ''}</td>
  <td data-testid="audit-reason">${r.reason ?? ''}</td><td class="code" data-testid="audit-request-id">${r.requestId ?? ''}</td>
  <td data-testid="audit-outcome">${r.outcome ?? 'unknown'}</td></tr>`,
  )}</tbody></table>`;
}

async function queuePage(d: Desk, ctx: AppContext): Promise<string> {
  const orders = await listSupportOrders(d.em, { fulfillmentStatus: 'needs_attention', limit: 100 });
  const states = await procurementStates(
    ctx.temporal,
    orders.map((o) => o.orderId),
  );
  return consolePage(d.viewer, {
    title: 'Needs attention',
    section: 'queue',
    body: html`<h1>Orders that need attention</h1>
<p class="muted">Direct-code orders the supplier could not fill in time, longest waiting first, with what their procurement workflow says.</p>
${
  orders.length === 0
    ? html`<p class="muted" data-testid="queue-empty">Nothing needs attention.</p>`
    : html`<table data-testid="queue"><thead><tr><th>Order</th><th>Reseller's id</th><th>Product</th><th class="num">Units</th><th>Waiting since</th><th>Workflow state</th></tr></thead>
<tbody>${orders.map((o) => {
        const s = states.get(o.orderId);
        return html`<tr data-testid="queue-row" data-order-id="${o.orderId}">
  <td><a href="/console/orders/${o.orderId}" class="code" data-testid="open-order">${o.orderId}</a><br><a href="/console/accounts/${o.accountId}" class="muted">account</a></td>
  <td class="code">${o.externalOrderId ?? '—'}</td><td>${o.productId ?? '—'}</td>
  <td class="num">${o.fulfilledQuantity} of ${o.qty}</td><td>${when(o.updatedAt)}</td>
  <td data-testid="workflow-state">${
    s
      ? html`${s.phase} · ${s.rounds} rounds · ${s.remaining} missing${s.lastSupplierError ? html`<br><span class="muted">${s.lastSupplierError}</span>` : ''}`
      : html`<span class="muted">no answer</span>`
  }</td></tr>`;
      })}</tbody></table>`
}`,
  });
}

async function storyPage(
  d: Desk,
  ctx: AppContext,
  order: Order,
  opts: { notice?: string; error?: string; status?: number } = {},
): Promise<string> {
  const summary = orderSummary(order, ctx.config.publicBaseUrl);
  const direct = order.kind === 'purchase' && order.deliveryType === 'direct_code';
  const detail = direct ? await supportOrderDetail({ em: d.em, temporal: ctx.temporal }, order.id) : undefined;
  const actions =
    detail?.actions ??
    (await supportActionsOf(d.em, order.id)).map((a) => ({
      ...a,
      createdAt: Math.floor(new Date(a.created_at).getTime() / 1000),
    }));
  const deliveries = await deliveriesOfOrder(d.em, order.id);
  const audit = await listAudit(d.em, { id: order.id, limit: 50 });
  const actionable =
    direct &&
    order.status === 'paid' &&
    (order.fulfillmentStatus === 'needs_attention' || order.fulfillmentStatus === 'processing');
  return consolePage(d.viewer, {
    title: `Order ${order.id}`,
    body: html`<h1>Order <span class="code">${order.id}</span></h1>
${noticeBox(opts.notice)}${errorBox(opts.error)}
<dl>
  <dt>Account</dt><dd><a href="/console/accounts/${order.accountId}" data-testid="account-link">${order.accountId}</a></dd>
  <dt>Reseller's id</dt><dd class="code">${summary.external_order_id ?? '—'}</dd>
  <dt>Status</dt><dd><span class="status" data-testid="order-status">${order.status}</span>${order.fulfillmentStatus ? html` · <span data-testid="fulfillment-status">${order.fulfillmentStatus}</span>` : ''}</dd>
  <dt>Product</dt><dd>${order.productId ?? '—'} × ${order.qty} (${order.fulfilledQuantity} obtained)</dd>
  <dt>Amount</dt><dd>${summary.amount} ${order.currency} · paid by ${order.payment}</dd>
  <dt>Placed</dt><dd>${when(order.createdAt)} via ${order.source}${order.placementId ? html` · request <span class="code">${order.placementId}</span>` : ''}</dd>
  <dt>Paid</dt><dd>${when(order.paidAt ?? null)}</dd>
  <dt>Delivered</dt><dd>${when(order.deliveredAt ?? null)}</dd>
  ${order.errorCode ? html`<dt>Problem</dt><dd>${order.errorCode}${order.resolution ? ` (${order.resolution})` : ''}</dd>` : ''}
  <dt>Workflows</dt><dd>${workflowsOf(order).map((id) => html`${wfLink(ctx, id)}<br>`)}</dd>
</dl>
${detail?.workflow ? html`<h2>Procurement workflow (state query)</h2><pre data-testid="workflow-json">${JSON.stringify(detail.workflow, null, 2)}</pre>` : ''}
${
  detail
    ? html`<h2>Supplier rounds</h2>${
        detail.supplierPurchases.length === 0
          ? html`<p class="muted">No purchase from the supplier.</p>`
          : html`<table><thead><tr><th>When</th><th>Supplier</th><th>State</th><th>Answer</th><th class="num">Units</th><th>Cost</th><th>Error</th></tr></thead>
<tbody>${detail.supplierPurchases.map(
              (
                p,
              ) => html`<tr><td>${when(p.createdAt)}</td><td>${p.supplier} <span class="code muted">${p.transactionId ?? ''}</span></td><td>${p.state}</td>
<td>${p.supplierStatus ?? '—'}</td><td class="num">${p.units} of ${p.requested}</td><td>${p.totalCost ?? '—'} ${p.currency ?? ''}</td><td>${p.error ?? ''}</td></tr>`,
            )}</tbody></table>`
      }`
    : ''
}
<h2>Webhook deliveries</h2>
${
  deliveries.length === 0
    ? html`<p class="muted">No webhook events for this order.</p>`
    : html`<table data-testid="order-deliveries"><thead><tr><th>Event</th><th>Status</th><th class="num">Attempts</th><th>Last answer</th><th>Created</th></tr></thead>
<tbody>${deliveries.map(
        (
          w,
        ) => html`<tr data-testid="order-delivery"><td>${w.event}</td><td data-testid="order-delivery-status">${w.status}</td><td class="num">${w.attempts}</td>
<td>${w.last_status_code ?? w.last_error ?? '—'}</td><td>${when(new Date(w.created_at))}</td></tr>`,
      )}</tbody></table>`
}
<h2>Support actions</h2>
${actions.length === 0 ? html`<p class="muted">None.</p>` : html`<ul>${actions.map((a) => html`<li>${when(a.createdAt)} · <strong>${a.action}</strong> by ${a.actor}: ${a.reason}</li>`)}</ul>`}
${actionable && d.may('support') ? actionForms(d, order) : ''}
<h2>Audit log</h2>
${auditTable(audit.items)}`,
  });
}

function actionForms(d: Desk, order: Order): SafeHtml {
  const base = `/console/orders/${order.id}`;
  return html`<h2>Resolve</h2>
<form method="post" action="${base}/deliver" class="action">${csrfField(d.viewer.csrf)}
  <label for="codes">Codes obtained by hand <span class="hint">(one per line, one per missing unit: ${order.qty - order.fulfilledQuantity})</span></label>
  <textarea id="codes" name="codes" required data-testid="deliver-codes"></textarea>
  ${reasonField('deliver-reason')}<button type="submit" data-testid="deliver">Deliver</button></form>
<form method="post" action="${base}/resume" class="action">${csrfField(d.viewer.csrf)}${reasonField('resume-reason')}
  <button type="submit" class="secondary" data-testid="resume">Resume (ask the supplier again)</button></form>
<form method="post" action="${base}/refund" class="action">${csrfField(d.viewer.csrf)}${reasonField('refund-reason')}
  <button type="submit" class="danger" data-testid="refund">Refund the undelivered units</button></form>`;
}

async function findOrder(d: Desk, id: string): Promise<Order | null> {
  return findOrderById(d.em, id);
}

export function orderRoutes(router: Router, ctx: AppContext): void {
  const deps = (d: Desk) => ({ em: d.em, temporal: ctx.temporal });

  router.get('/', async (req, res) => {
    send(res, 200, await queuePage(desk(req, res, ctx), ctx));
  });

  router.get('/orders/:id', async (req, res) => {
    const d = desk(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const order = await findOrder(d, id);
    if (!order)
      return send(
        res,
        404,
        consolePage(d.viewer, {
          title: 'Not found',
          body: html`<h1>Not found</h1><p class="error" data-testid="error">No order ${id}.</p>`,
        }),
      );
    send(res, 200, await storyPage(d, ctx, order, { notice: noticeFrom(req, NOTICES) }));
  });

  const action = (name: 'resume' | 'deliver' | 'refund') => async (req: Request, res: Response) => {
    const d = desk(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const order = await findOrder(d, id);
    try {
      const who = (reason: string) => ({ actor: actorLabel(d.actor), reason });
      if (name === 'deliver') {
        const form = DeliverForm.parse(req.body ?? {});
        // The audit row counts the codes; the codes themselves never leave the order.
        await act(
          d,
          {
            action: 'order.deliver',
            subjectId: id,
            accountId: order?.accountId,
            reason: form.reason,
            details: { codes: form.codes.length },
          },
          () => deliverOrder(deps(d), id, { ...who(form.reason), codes: form.codes }),
        );
      } else {
        const { reason } = ReasonForm.parse(req.body ?? {});
        await act(d, { action: `order.${name}`, subjectId: id, accountId: order?.accountId, reason }, () =>
          ACTIONS[name](deps(d), id, who(reason)),
        );
      }
      res.redirect(303, `/console/orders/${encodeURIComponent(id)}?notice=${name}`);
    } catch (err) {
      const e = formError(err);
      if (!order) throw err;
      const fresh = (await findOrderById(d.em.fork(), id)) ?? order;
      send(
        res,
        e.status,
        await storyPage({ ...d, em: d.em.fork() }, ctx, fresh, { error: plainMessage(e) }),
        e.headers,
      );
    }
  };
  for (const name of ['resume', 'deliver', 'refund'] as const)
    router.post(`/orders/:id/${name}`, only('support'), action(name));
}
