import express, { Router } from 'express';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { fromDb, toDecimal } from '../domain/money';
import { COMPLIANCE_NOTICE } from '../providers/payment-provider';
import { abandonCheckout, findCheckout, payCheckout, type CheckoutRow } from '../providers/sandbox/sandbox-payments';
import { checkoutRateLimit } from './checkout-limit';
import { html, page, sendPage } from './page-layout';

// The built-in sandbox provider's hosted checkout (/checkout/:id), where a person pays or abandons.
// It belongs to the sandbox, not to the service: it acts on the sandbox's own checkouts, and the
// service learns the outcome only from the sandbox's signed callback or its status API.

export function checkoutPages(deps: { orm: Orm; config: Config }): Router {
  const { orm } = deps;
  const secret = deps.config.PAYMENT_CALLBACK_SECRET;
  const { limit, limitedPage } = checkoutRateLimit(deps);
  const pages = Router();
  pages.use(express.urlencoded({ extended: false }));
  pages.get('/:id', limit, async (req, res) => {
    const row = await findCheckout(orm.em.fork(), req.params.id);
    if (!row)
      return sendPage(
        res,
        404,
        page({
          title: 'Checkout not found',
          body: html`<h1>Checkout not found</h1><p class="lead">This payment link is not valid.</p>`,
        }),
      );
    sendPage(res, 200, checkoutPage(row));
  });
  for (const action of ['pay', 'abandon'] as const) {
    pages.post(`/:id/${action}`, async (req, res) => {
      const em = orm.em.fork();
      if (action === 'pay') await payCheckout(em, secret, req.params.id);
      else await abandonCheckout(em, secret, req.params.id);
      const row = await findCheckout(em, req.params.id);
      if (!row) return void res.status(404).end();
      sendPage(res, 200, checkoutPage(row));
    });
  }
  pages.use(limitedPage);
  return pages;
}

function checkoutPage(row: CheckoutRow): string {
  const amount = toDecimal(fromDb(row.amount));
  const body = html`
    <h1>Pay ${amount} ${row.currency}</h1>
    <p class="lead">${row.description}</p>
    <dl>
      <dt>Amount</dt><dd data-testid="amount">${amount}</dd>
      <dt>Currency</dt><dd data-testid="currency">${row.currency}</dd>
      <dt>Network</dt><dd>${row.currency === 'USDC' ? 'USDC (ERC-20 / TRC-20)' : 'USDT (TRC-20 / ERC-20)'}</dd>
      <dt>Status</dt><dd><span class="status ${row.status === 'paid' ? 'fulfilled' : row.status === 'abandoned' ? 'failed' : ''}" data-testid="status">${row.status}</span></dd>
    </dl>
    <p class="notice" data-testid="compliance">${COMPLIANCE_NOTICE}</p>
    ${
      row.status === 'pending'
        ? html`<form method="post" action="${row.id}/pay"><button type="submit" data-testid="pay">Pay ${amount} ${row.currency}</button></form>
             <form method="post" action="${row.id}/abandon"><button type="submit" class="secondary" data-testid="abandon" style="background:#5b6475">Abandon</button></form>`
        : row.status === 'paid'
          ? html`<p data-testid="result">Payment received. You can close this page.</p>`
          : html`<p data-testid="result">This checkout was abandoned.</p>`
    }
    <footer>Sandbox hosted checkout — no real funds move.</footer>`;
  return page({ title: `Pay ${amount} ${row.currency}`, body });
}
