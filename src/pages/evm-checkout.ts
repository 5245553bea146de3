import { Router } from 'express';
import QRCode from 'qrcode';
import type { AppContext } from '../http/context';
import { checkoutView } from '../services/payments/evm-checkouts';
import { checkoutRateLimit } from './checkout-limit';
import { checkoutPage, selectOption, type CheckoutOption } from './evm-checkout-view';
import { html, page, sendPage } from './page-layout';

// The self-hosted EVM checkout's page (PAYMENT_PROVIDER=evm): /checkout/<id>, its status JSON and
// its script. The id is the capability: whoever has the link may see what to pay and how far it
// got, so nothing else about the order or the reseller is shown.

const QR_PIXELS = 200;

/**
 * The option's EIP-681 URI as an SVG QR code, a whole number of pixels per module (near
 * QR_PIXELS across), so that no module is drawn blurred across a pixel boundary for a camera to
 * misread.
 */
async function qrSvg(uri: string): Promise<string> {
  const margin = 2;
  const modules = QRCode.create(uri, { errorCorrectionLevel: 'M' }).modules.size + 2 * margin;
  const width = modules * Math.max(3, Math.round(QR_PIXELS / modules));
  return QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin, width });
}

export function evmCheckoutPages(ctx: AppContext): Router {
  const evm = ctx.providers.evm!;
  const decimalsOf = (o: CheckoutOption) => evm.chains.find((c) => c.chainId === o.chainId)!.tokens[o.token]!.decimals;
  const { limit, limitedPage } = checkoutRateLimit(ctx);
  const pages = Router();

  pages.get('/assets/checkout.js', (_req, res) => {
    res
      .set({
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=300',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(CHECKOUT_SCRIPT);
  });

  pages.get('/:id/status.json', limit, async (req, res) => {
    const view = await checkoutView(ctx.orm.em.fork(), req.params.id, evm.chains);
    res.set({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
    if (!view) return void res.status(404).json({ error: 'not_found', message: 'Unknown checkout' });
    res.json(view);
  });

  pages.get('/:id', limit, async (req, res) => {
    const view = await checkoutView(ctx.orm.em.fork(), req.params.id, evm.chains);
    if (!view)
      return sendPage(
        res,
        404,
        page({
          title: 'Checkout not found',
          body: html`<h1>Checkout not found</h1><p class="lead">This payment link is not valid.</p>`,
        }),
      );
    const option = selectOption(view, req.query);
    const selected = option && { option, decimals: decimalsOf(option), qrSvg: await qrSvg(option.uri) };
    sendPage(res, 200, checkoutPage({ base: req.baseUrl, view, selected, now: Date.now() }));
  });
  pages.use(limitedPage);
  return pages;
}

// Polls the status JSON every 3 s and updates the marked text in place; it reloads the page when
// the status or the missing amount changed, since the QR code and the amount to send are drawn by
// the server. Mirrors secondsLeftText, confirmationsText and transferText of evm-checkout-view.ts.
// The Copy buttons are hidden until this script can make them work.
const CHECKOUT_SCRIPT = `(() => {
  for (const button of document.querySelectorAll('[data-copy]')) {
    const field = document.getElementById(button.getAttribute('data-copy'));
    button.hidden = false;
    button.addEventListener('click', async () => {
      field.select();
      try { await navigator.clipboard.writeText(field.value); } catch (e) { document.execCommand('copy'); }
      button.textContent = 'Copied';
      setTimeout(() => { button.textContent = 'Copy'; }, 1500);
    });
  }

  const left = document.querySelector('[data-seconds-left]');
  if (left) {
    // Counted from the server's figure on this machine's monotonic clock, whatever its wall clock says.
    const end = performance.now() + Number(left.getAttribute('data-seconds-left')) * 1000;
    const countDown = () => {
      const seconds = Math.max(0, Math.round((end - performance.now()) / 1000));
      const minutes = Math.floor(seconds / 60);
      left.textContent = minutes > 0 ? minutes + ' min ' + (seconds % 60) + ' s' : seconds + ' s';
      if (seconds > 0) setTimeout(countDown, 1000);
    };
    setTimeout(countDown, 1000);
  }

  const root = document.querySelector('[data-poll-url]');
  if (!root) return;
  const url = root.getAttribute('data-poll-url');
  const shown = root.getAttribute('data-status');
  const missing = root.getAttribute('data-missing');
  const setText = (name, text) => {
    for (const el of document.querySelectorAll('[data-field="' + name + '"]')) el.textContent = text;
  };
  const update = (view) => {
    setText('received', view.received);
    setText('missing', view.missing);
    const seen = view.transfers.filter((t) => t.state === 'seen').sort((a, b) => a.confirmations - b.confirmations)[0];
    if (seen) setText('confirmations', seen.confirmations + ' of ' + seen.required);
    const list = document.querySelector('[data-testid="transfers"]');
    if (list) {
      list.replaceChildren(...view.transfers.map((t) => {
        const li = document.createElement('li');
        const depth = t.state === 'confirmed' ? 'confirmed' : t.confirmations + ' of ' + t.required + ' confirmations';
        li.textContent = t.amount + ' ' + t.token + ' on ' + t.chainName + ': ' + depth;
        return li;
      }));
    }
  };
  const poll = async () => {
    try {
      const res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store' });
      if (res.ok) {
        const view = await res.json();
        if (view.status !== shown || view.missing !== missing) { location.reload(); return; }
        update(view);
      }
    } catch (e) { /* offline for a moment: try again */ }
    setTimeout(poll, 3000);
  };
  setTimeout(poll, 3000);
})();`;
