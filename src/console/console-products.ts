import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import type { AppContext } from '../http/context';
import { IdString } from '../http/hygiene';
import { formError, noticeFrom } from '../pages/account/account-area';
import { LEVELS, priceList, setProductPrice } from '../services/supply/prices';
import { act, desk, only, type Desk } from './console-guard';
import { consolePage, csrfField, errorBox, html, noticeBox, plainMessage, reasonField, send } from './console-layout';

// The catalog's prices by level. Everyone signed in reads them; an admin sets one, with a reason,
// as an audited action. A reseller who sent the old price as `expectedUnitPrice` gets
// `price_changed`, not a charge they did not see.

const NOTICES = { priced: 'The price is set.' };

const PriceForm = z.object({
  level: z.coerce.number().int().min(1).max(5),
  price: z
    .string()
    .trim()
    .regex(/^\d+(\.\d{1,2})?$/, 'an amount like 12.50')
    .pipe(z.string().max(16)),
  reason: z.string().trim().min(1, 'give a reason').max(2000),
});
const ProductParams = z.object({ id: IdString(128) });

async function pricesPage(d: Desk, opts: { notice?: string; error?: string } = {}): Promise<string> {
  const products = await priceList(d.em);
  const editable = d.may('admin');
  return consolePage(d.viewer, {
    title: 'Prices',
    section: 'prices',
    body: html`<h1>Prices</h1>
${noticeBox(opts.notice)}${errorBox(opts.error)}
<table data-testid="prices"><thead><tr><th>Product</th><th>Currency</th>${LEVELS.map((l) => html`<th>Lv${l}</th>`)}${editable ? html`<th>Set a price</th>` : ''}</tr></thead>
<tbody>${products.map(
      (p) => html`<tr data-testid="price-row" data-product="${p.id}">
  <td>${p.name}<br><span class="code muted">${p.id}</span>${p.active ? '' : html` <span class="muted">(inactive)</span>`}</td><td>${p.currency}</td>
  ${LEVELS.map((l) => html`<td data-testid="price-${l}">${p.prices[l] ?? '—'}</td>`)}
  ${
    editable
      ? html`<td><form method="post" action="/console/prices/${p.id}" class="action">${csrfField(d.viewer.csrf)}
    <label>Level <select name="level">${LEVELS.map((l) => html`<option value="${l}">Lv${l}</option>`)}</select></label>
    <label>Price <input name="price" inputmode="decimal" placeholder="12.50" required></label>
    ${reasonField(`reason-${p.id}`)}<button type="submit" data-testid="set-price">Set</button></form></td>`
      : ''
  }
</tr>`,
    )}</tbody></table>`,
  });
}

export function productRoutes(router: Router, ctx: AppContext): void {
  router.get('/prices', async (req, res) => {
    send(res, 200, await pricesPage(desk(req, res, ctx), { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/prices/:id', only('admin'), async (req: Request, res: Response) => {
    const d = desk(req, res, ctx);
    try {
      const { id } = ProductParams.parse(req.params);
      const form = PriceForm.parse(req.body ?? {});
      await act(
        d,
        { action: 'price.set', subjectId: id, reason: form.reason, details: { level: form.level, price: form.price } },
        () => setProductPrice(d.em, { productId: id, level: form.level, price: form.price }),
      );
      res.redirect(303, '/console/prices?notice=priced');
    } catch (err) {
      const e = formError(err);
      send(res, e.status, await pricesPage({ ...d, em: d.em.fork() }, { error: plainMessage(e) }), e.headers);
    }
  });
}
