import { formatScaled, toScaled } from '../domain/token-amounts';
import { COMPLIANCE_NOTICE } from '../providers/payment-provider';
import type { CheckoutView } from '../services/payments/evm-checkouts';
import { html, page, SafeHtml } from './page-layout';

// The EVM checkout's page, rendered from its CheckoutView: what to send where, and how far the
// payment got. Its script (CHECKOUT_SCRIPT in evm-checkout.ts) keeps the elements marked
// data-field current from the status JSON and repeats the three small formats below
// (secondsLeftText, confirmationsText, transferText); a change to one is a change to both.

export type CheckoutOption = CheckoutView['options'][number];

/** After these nothing more can happen on the page: it stops refreshing. */
const FINAL: ReadonlySet<CheckoutView['status']> = new Set(['paid', 'closed']);
/** While these last the page asks for money; past them it must not show where to send any. */
const PAYABLE: ReadonlySet<CheckoutView['status']> = new Set(['waiting', 'confirming', 'partly_paid']);

const STATUS_CLASS: Partial<Record<CheckoutView['status'], string>> = {
  paid: 'fulfilled',
  expired: 'failed',
  closed: 'failed',
};

/**
 * The option the query names (`?chain=<chainId>&token=<symbol>`), else the order currency's token
 * on the first chain that has it. A query naming nothing offered is not an error: a hand-edited or
 * outdated link still shows a way to pay.
 */
export function selectOption(
  view: CheckoutView,
  query: { chain?: unknown; token?: unknown },
): CheckoutOption | undefined {
  const named = view.options.find((o) => String(o.chainId) === query.chain && o.token === query.token);
  return named ?? view.options.find((o) => o.token === view.currency) ?? view.options[0];
}

export function secondsLeftText(seconds: number): string {
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes} min ${seconds % 60} s` : `${seconds} s`;
}

/** How deep the least confirmed transfer still being waited for is ("1 of 2"). */
export function confirmationsText(view: CheckoutView): string {
  const seen = view.transfers.filter((t) => t.state === 'seen').sort((a, b) => a.confirmations - b.confirmations)[0];
  return seen ? `${seen.confirmations} of ${seen.required}` : '';
}

export function transferText(t: CheckoutView['transfers'][number]): string {
  const depth = t.state === 'confirmed' ? 'confirmed' : `${t.confirmations} of ${t.required} confirmations`;
  return `${t.amount} ${t.token} on ${t.chainName}: ${depth}`;
}

function statusLine(view: CheckoutView): SafeHtml {
  const c = view.currency;
  const progress = html`received <span data-field="received">${view.received}</span> ${c},
    missing <span data-testid="missing" data-field="missing">${view.missing}</span> ${c}`;
  switch (view.status) {
    case 'waiting':
      return html`Waiting for payment.`;
    case 'confirming':
      return html`Payment seen, <span data-field="confirmations">${confirmationsText(view)}</span> confirmations${view.received === '0.00' ? '' : html`; ${progress}`}.`;
    case 'partly_paid':
      return html`Partly paid: ${progress}. Send the rest to the same address.`;
    case 'paid':
      return html`Paid. Thank you, you can close this page.`;
    case 'expired':
      return html`Expired: the time to pay is over. Do not send anything to this address.`;
    case 'closed':
      return html`Closed: this checkout no longer takes payments. Do not send anything to this address.`;
  }
}

export interface CheckoutPageInput {
  /** Where the checkout router is mounted (/checkout). */
  base: string;
  view: CheckoutView;
  /** The chain and token whose payment details are shown, their token's decimals and QR code (SVG markup we made). */
  selected?: { option: CheckoutOption; decimals: number; qrSvg: string };
  now: number;
}

export function checkoutPage({ base, view, selected, now }: CheckoutPageInput): string {
  const final = FINAL.has(view.status);
  const payable = PAYABLE.has(view.status);
  const secondsLeft = view.expiresAt === null ? undefined : Math.max(0, Math.round((view.expiresAt - now) / 1000));
  const body = html`<h1>Pay ${view.amount} ${view.currency}</h1>
<p class="lead">In USDT or USDC, to this checkout's own deposit address.</p>
<div class="pay-status" data-testid="status" data-status="${view.status}" data-missing="${view.missing}"
  ${final ? '' : html`data-poll-url="${base}/${encodeURIComponent(view.id)}/status.json"`}>
  <span class="status ${STATUS_CLASS[view.status] ?? ''}">${view.status}</span>
  <span>${statusLine(view)}</span>
  ${
    payable && secondsLeft !== undefined
      ? html`<p class="hint">Time left: <span data-testid="time-left" data-seconds-left="${secondsLeft}">${secondsLeftText(secondsLeft)}</span></p>`
      : ''
  }
</div>
${payable && selected ? paymentDetails(view, selected) : ''}
${
  view.transfers.length > 0
    ? html`<h2>Transfers</h2><ul class="transfers" data-testid="transfers">${view.transfers.map((t) => html`<li>${transferText(t)}</li>`)}</ul>`
    : ''
}
<p class="notice" data-testid="compliance">${COMPLIANCE_NOTICE}</p>
${final ? '' : html`<footer>This page updates by itself. Keep it open until the payment shows as paid.</footer>`}`;
  return page({
    title: `Pay ${view.amount} ${view.currency}`,
    head: html`<style>${new SafeHtml(STYLE)}</style>${final ? '' : html`<noscript><meta http-equiv="refresh" content="15"></noscript>`}`,
    scripts: final ? [] : [`${base}/assets/checkout.js`],
    body,
  });
}

function paymentDetails(view: CheckoutView, selected: NonNullable<CheckoutPageInput['selected']>): SafeHtml {
  const { option, decimals } = selected;
  const amount = formatScaled(toScaled(BigInt(option.units), decimals));
  return html`<nav class="options" aria-label="Network and token">${view.options.map((o) =>
    o === option
      ? html`<a href="?chain=${o.chainId}&token=${o.token}" class="selected" aria-current="true">${o.token} on ${o.chainName}</a>`
      : html`<a href="?chain=${o.chainId}&token=${o.token}">${o.token} on ${o.chainName}</a>`,
  )}</nav>
<div class="qr" data-testid="qr" data-uri="${option.uri}">${new SafeHtml(selected.qrSvg)}</div>
<p class="uri" data-testid="uri">${option.uri}</p>
<label for="address">Deposit address</label>
<div class="copy"><input id="address" class="code" data-testid="address" value="${option.address}" readonly spellcheck="false">
  <button type="button" data-copy="address" data-testid="copy-address" hidden>Copy</button></div>
<label for="amount">Amount to send <span class="hint">(${option.token})</span></label>
<div class="copy"><input id="amount" class="code" data-testid="amount" value="${amount}" readonly>
  <button type="button" data-copy="amount" data-testid="copy-amount" hidden>Copy</button></div>
<p class="hint">That is ${option.units} in the token's smallest units (${decimals} decimals).</p>
<dl>
  <dt>Network</dt><dd data-testid="chain">${option.chainName} (chain id ${option.chainId})</dd>
  <dt>Token contract</dt><dd class="code" data-testid="token-address">${option.tokenAddress}</dd>
</dl>
<p class="hint">Send only ${option.token} on ${option.chainName}. ${
    option.kind === 'tron'
      ? 'The QR code holds the address only (what TRON wallets read): enter the amount and pick the token yourself.'
      : 'Not every wallet reads the whole QR code: check the network, the token contract and the amount before you confirm.'
  }</p>`;
}

// The page's own additions to the shared stylesheet: long hex strings wrap instead of overflowing.
const STYLE = `
h2 { font-size: 1.1rem; margin: 1.5rem 0 .25rem; }
.pay-status { margin: 1rem 0; }
.options { display: flex; flex-wrap: wrap; gap: .5rem; margin: 1rem 0; }
.options a { padding: .3rem .8rem; border: 1px solid var(--line); border-radius: 999px; color: var(--accent); text-decoration: none; }
.options a.selected { background: var(--accent); border-color: var(--accent); color: #fff; font-weight: 600; }
.qr { width: fit-content; margin: 1rem auto .25rem; line-height: 0; }
.qr svg { display: block; }
.uri { margin: 0 0 1rem; color: var(--muted); font-size: .75rem; text-align: center; word-break: break-all; }
.copy { display: flex; gap: .5rem; }
.copy input { min-width: 0; font-size: .85rem; }
.copy button { margin: 0; padding: .5rem .9rem; }
.copy button[hidden] { display: none; }
dd.code { word-break: break-all; font-size: .85rem; }
ul.transfers { padding-left: 1.25rem; }
`;
