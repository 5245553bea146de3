import type { Router } from 'express';
import type { AppContext } from '../../http/context';
import { COMPLIANCE_NOTICE } from '../../providers/payment-provider';
import { listOrders, orderDetail } from '../../services/orders/order-queries';
import { html } from '../page-layout';
import { area, type Area } from './account-area';
import { IdParams, ListQuery } from './account-forms';
import { areaPage, csrfField, send, when } from './account-layout';

// The account's orders as GET /orders lists them (purchases and top-ups), and one order's detail.
// Codes never appear in a list or on the detail page itself: only the answer to an explicit
// "Reveal codes" form (a POST, so no link, prefetch or history entry shows them) carries them.

const ORDERS_PAGE = 25;

const STATUS_CLASS: Record<string, string> = { delivered: 'fulfilled', expired: 'failed', refunded: 'failed' };

type Detail = Awaited<ReturnType<typeof orderDetail>>;

function detailPage(a: Area, d: Detail, codes?: string[]): string {
  const topup = d.channel === 'topup';
  const status = html`<span class="status ${STATUS_CLASS[d.status] ?? ''}" data-testid="order-status">${d.status}</span>`;
  return areaPage({
    title: `Order ${d.id}`,
    section: 'orders',
    email: a.email,
    csrf: a.csrf,
    body: html`<h1>${topup ? 'Top-up' : 'Order'} <span class="code">${d.id}</span></h1>
<dl>
  <dt>Status</dt><dd>${status}</dd>
  <dt>Your id</dt><dd class="code">${d.external_order_id ?? '—'}</dd>
  ${topup ? '' : html`<dt>Product</dt><dd>${d.product_name ?? d.product_id}</dd><dt>Quantity</dt><dd>${d.qty}</dd><dt>Unit price</dt><dd>${d.unit_price} ${d.currency}</dd>`}
  <dt>Amount</dt><dd data-testid="order-amount">${d.amount} ${d.currency}</dd>
  <dt>Created</dt><dd>${when(d.created_at)}</dd>
  <dt>Paid</dt><dd>${when(d.paid_at)}</dd>
  ${d.deliveryType ? html`<dt>Delivery</dt><dd>${d.deliveryType === 'redemption' ? 'Redemption code' : 'Gift card code'}${d.fulfillmentStatus ? ` · ${d.fulfillmentStatus}` : ''} · ${d.fulfilledQuantity} of ${d.qty}</dd>` : ''}
  ${d.redeemUrl ? html`<dt>Redeem at</dt><dd><a href="${d.redeemUrl}">${d.redeemUrl}</a></dd>` : ''}
  ${d.errorCode ? html`<dt>Problem</dt><dd>${d.errorCode}${d.resolution ? ` (${d.resolution})` : ''}</dd>` : ''}
</dl>
${
  d.paymentUrl
    ? html`<h2>Payment</h2>
<p>This ${topup ? 'top-up' : 'order'} waits for payment at the hosted checkout.</p>
<p class="notice" data-testid="compliance">${COMPLIANCE_NOTICE}</p>
<p><a class="button" href="${d.paymentUrl}" data-testid="pay-link" rel="noreferrer">Pay ${d.amount} ${d.currency} at the checkout</a></p>`
    : ''
}
${
  codes
    ? html`<h2>Codes</h2><ol class="code" data-testid="codes">${codes.map((c) => html`<li data-testid="code">${c}</li>`)}</ol>
<p class="muted">Shown because you asked; this page is not cached. Keep the codes safe.</p>`
    : d.codes.length > 0
      ? html`<h2>Codes</h2><p>${d.codes.length} code${d.codes.length === 1 ? '' : 's'} delivered.</p>
<form method="post" action="/account/orders/${d.id}/codes">${csrfField(a.csrf)}<button type="submit" data-testid="reveal-codes">Reveal codes</button></form>`
      : ''
}
<p><a href="/account/orders">All orders</a></p>`,
  });
}

export function orderRoutes(router: Router, ctx: AppContext): void {
  const baseUrl = ctx.config.publicBaseUrl;

  router.get('/orders', async (req, res) => {
    const a = area(req, res, ctx);
    const query = ListQuery.parse(req.query);
    const page = await listOrders(a.em, {
      accountId: a.accountId,
      limit: ORDERS_PAGE,
      cursor: query.cursor,
      baseUrl,
      cursorSecret: ctx.config.CURSOR_SECRET,
    });
    send(
      res,
      200,
      areaPage({
        title: 'Orders',
        section: 'orders',
        email: a.email,
        csrf: a.csrf,
        body: html`<h1>Orders</h1>
<p class="muted">Purchases and top-ups, newest first. Open an order to see its details and reveal its codes.</p>
${
  page.items.length === 0
    ? html`<p class="muted" data-testid="no-orders">No orders yet.</p>`
    : html`<table class="cards" data-testid="orders"><thead><tr><th>Order</th><th>Your id</th><th>Kind</th><th>Product</th><th class="num">Qty</th><th class="num">Amount</th><th>Status</th></tr></thead>
<tbody>${page.items.map(
        (o) => html`<tr data-testid="order-row" data-order-id="${o.id}">
  <td data-label="Order"><a href="/account/orders/${o.id}" class="code">${o.id}</a></td>
  <td data-label="Your id" class="code">${o.external_order_id ?? '—'}</td>
  <td data-label="Kind">${o.channel === 'topup' ? 'Top-up' : 'Purchase'}</td>
  <td data-label="Product">${o.product_id ?? '—'}</td>
  <td data-label="Qty" class="num">${o.qty}</td>
  <td data-label="Amount" class="num">${o.amount}</td>
  <td data-label="Status"><span class="status ${STATUS_CLASS[o.status] ?? ''}">${o.status}</span></td>
</tr>`,
      )}</tbody></table>`
}
<div class="pager">${query.cursor ? html`<a href="/account/orders">Newest</a>` : ''}${
          page.nextCursor ? html`<a href="/account/orders?cursor=${page.nextCursor}" data-testid="older">Older</a>` : ''
        }</div>`,
      }),
    );
  });

  router.get('/orders/:id', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    send(res, 200, detailPage(a, await orderDetail(a.em, a.accountId, id, baseUrl)));
  });

  router.post('/orders/:id/codes', async (req, res) => {
    const a = area(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const detail = await orderDetail(a.em, a.accountId, id, baseUrl);
    ctx.logger.info(
      { requestId: res.locals.requestId, accountId: a.accountId, orderId: id, count: detail.codes.length },
      'codes revealed in the account area',
    );
    send(res, 200, detailPage(a, detail, detail.codes));
  });
}
