import { randomBytes } from 'node:crypto';
import type { Request, Response, Router } from 'express';
import type { AppContext } from '../../http/context';
import { COMPLIANCE_NOTICE } from '../../providers/payment-provider';
import { accountSummary } from '../../services/accounts/account-views';
import { listTransactions } from '../../services/orders/order-queries';
import { submitTopup } from '../../services/payments/topup-submission';
import { html } from '../page-layout';
import { area, formError, noticeFrom, type Area } from './account-area';
import { ListQuery, TopupForm } from './account-forms';
import { areaPage, csrfField, errorBox, noticeBox, plainMessage, send, when } from './account-layout';

// Balance, level and the way to the next one, the ledger, and top-ups. A top-up goes through
// submitTopup, the service behind POST /topup and MCP create_topup, so the hourly quota and the
// unpaid limit are one budget for all three.

const LEDGER_PAGE = 25;

const NOTICES = { welcome: 'Your account is ready. Create an API key to start using the API.' };

const TYPE_LABEL: Record<string, string> = {
  topup: 'Top-up',
  purchase: 'Purchase',
  refund: 'Refund',
  adjust: 'Adjustment',
};

type Transaction = Awaited<ReturnType<typeof listTransactions>>['items'][number];

function ledgerTable(rows: Transaction[]) {
  if (rows.length === 0) return html`<p class="muted" data-testid="ledger-empty">No balance changes yet.</p>`;
  return html`<table class="cards" data-testid="ledger">
<thead><tr><th>When</th><th>Type</th><th class="num">Amount</th><th class="num">Balance after</th><th>Order</th><th>Note</th></tr></thead>
<tbody>${rows.map(
    (t) => html`<tr data-testid="ledger-row">
  <td data-label="When">${when(t.created_at)}</td>
  <td data-label="Type">${TYPE_LABEL[t.type] ?? t.type}</td>
  <td data-label="Amount" class="num" data-testid="ledger-amount">${t.amount}</td>
  <td data-label="Balance after" class="num" data-testid="ledger-balance-after">${t.balanceAfter}</td>
  <td data-label="Order">${t.order_id ? html`<a href="/account/orders/${t.order_id}">${t.order_id}</a>` : '—'}</td>
  <td data-label="Note">${t.note ?? ''}</td>
</tr>`,
  )}</tbody></table>`;
}

async function overviewPage(
  a: Area,
  ctx: AppContext,
  opts: { error?: string; notice?: string; amount?: string; currency?: string } = {},
): Promise<string> {
  const summary = await accountSummary(a.em, a.accountId, ctx.config.LEVEL_THRESHOLDS);
  const recent = await listTransactions(a.em, {
    accountId: a.accountId,
    limit: 5,
    cursorSecret: ctx.config.CURSOR_SECRET,
  });
  // A fresh id per rendered form: sending the same form twice is one top-up, not two.
  const nonce = `web-${randomBytes(12).toString('base64url')}`;
  return areaPage({
    title: 'Balance',
    section: 'overview',
    email: a.email,
    csrf: a.csrf,
    body: html`<h1>Balance</h1>
${noticeBox(opts.notice)}
<p class="big"><span data-testid="balance">${summary.balance}</span> <span class="muted">USDT</span></p>
<dl>
  <dt>Level</dt><dd data-testid="level">Lv${summary.level}</dd>
  <dt>Spending + balance</dt><dd data-testid="progress">${summary.progress} USDT <span class="muted">(spent ${summary.cumulativeSpending})</span></dd>
  <dt>Next level</dt><dd data-testid="next-level">${
    summary.next
      ? `Lv${summary.next.level} at ${summary.next.threshold} USDT: ${summary.next.remaining} USDT to go`
      : 'You are at the top level.'
  }</dd>
</dl>

<h2 id="topup">Top up</h2>
<p class="muted">You pay at a hosted crypto checkout; the balance is credited once the payment arrives.</p>
${errorBox(opts.error)}
<form method="post" action="/account/topup" class="inline-form">
  ${csrfField(a.csrf)}
  <input type="hidden" name="nonce" value="${nonce}">
  <div><label for="amount">Amount</label><input id="amount" name="amount" inputmode="decimal" placeholder="50.00" value="${opts.amount ?? ''}" required></div>
  <div><label for="currency">Currency</label><select id="currency" name="currency">
    ${['USDT', 'USDC'].map((c) => html`<option value="${c}"${c === opts.currency ? ' selected' : ''}>${c}</option>`)}
  </select></div>
  <div><button type="submit" data-testid="topup">Continue to payment</button></div>
</form>
<p class="notice" data-testid="compliance">${COMPLIANCE_NOTICE}</p>

<h2>Latest balance changes</h2>
${ledgerTable(recent.items)}
<p><a href="/account/ledger">The whole ledger</a></p>`,
  });
}

export function moneyRoutes(router: Router, ctx: AppContext): void {
  router.get('/', async (req, res) => {
    send(res, 200, await overviewPage(area(req, res, ctx), ctx, { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/topup', async (req: Request, res: Response) => {
    const a = area(req, res, ctx);
    try {
      const form = TopupForm.parse(req.body ?? {});
      const topup = await submitTopup(
        {
          em: a.em,
          temporal: ctx.temporal,
          limits: { perHour: ctx.config.TOPUP_RATE_LIMIT_PER_HOUR, maxPending: ctx.config.MAX_PENDING_TOPUPS },
          config: ctx.config,
          admission: ctx.admission,
          answerKey: ctx.answerKey,
        },
        // Recorded as a REST top-up: the top-up services know the sources 'rest' and 'mcp' only.
        {
          accountId: a.accountId,
          externalTopupId: form.nonce,
          amount: form.amount,
          currency: form.currency,
          source: 'rest',
        },
      );
      res.redirect(303, `/account/orders/${encodeURIComponent(topup.orderId)}`);
    } catch (err) {
      const e = formError(err);
      const body = req.body ?? {};
      const shown = {
        amount: typeof body.amount === 'string' ? body.amount.slice(0, 32) : '',
        currency: body.currency,
      };
      send(res, e.status, await overviewPage(a, ctx, { ...shown, error: plainMessage(e) }), e.headers);
    }
  });

  router.get('/ledger', async (req, res) => {
    const a = area(req, res, ctx);
    const query = ListQuery.parse(req.query);
    const page = await listTransactions(a.em, {
      accountId: a.accountId,
      limit: LEDGER_PAGE,
      cursor: query.cursor,
      cursorSecret: ctx.config.CURSOR_SECRET,
    });
    send(
      res,
      200,
      areaPage({
        title: 'Ledger',
        section: 'ledger',
        email: a.email,
        csrf: a.csrf,
        body: html`<h1>Ledger</h1>
<p class="muted">Every change of your balance, newest first, with the balance after it.</p>
${ledgerTable(page.items)}
<div class="pager">${query.cursor ? html`<a href="/account/ledger">Newest</a>` : ''}${
          page.nextCursor ? html`<a href="/account/ledger?cursor=${page.nextCursor}" data-testid="older">Older</a>` : ''
        }</div>`,
      }),
    );
  });
}
