import type { Response } from 'express';
import type { ApiError } from '../../domain/errors';
import { html, page, sendPage, SafeHtml } from '../page-layout';
import { csrfField, errorBox, noticeBox } from '../signed-in-area';

// The account area's frame: the shared page (escaping, stylesheet, security headers, no-store)
// plus a navigation bar, wider tables that turn into labelled cards on a phone, and the small
// pieces every form uses (the CSRF field, error and notice boxes).

const AREA_STYLE = `
main { max-width: 60rem; }
nav.area { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; margin: -0.5rem 0 1.5rem; padding-bottom: .75rem; border-bottom: 1px solid var(--line); }
nav.area a { color: var(--accent); text-decoration: none; font-weight: 600; }
nav.area a[aria-current="page"] { color: var(--ink); text-decoration: underline; }
nav.area form { margin: 0 0 0 auto; }
nav.area button { margin: 0; padding: .3rem .8rem; background: #5b6475; }
h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; }
table { width: 100%; border-collapse: collapse; font-size: .95rem; }
th, td { text-align: left; padding: .45rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td form, td button { display: inline; margin: 0; }
td button { padding: .3rem .7rem; font-size: .875rem; }
button.secondary { background: #5b6475; }
button.danger { background: var(--bad); }
.inline-form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
.inline-form > div { flex: 1 1 12rem; }
.inline-form button { margin-top: 0; }
.secret { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; padding: .6rem .7rem; background: #f4f6fa; border: 1px dashed var(--accent); border-radius: 8px; user-select: all; }
/* A secret shown once with its copy button (a new key, the webhook's secret); checkbox lists. */
label.check { display: flex; gap: .5rem; align-items: baseline; font-weight: 400; margin: .35rem 0; }
label.check input { width: auto; }
.secret-row { display: flex; gap: .5rem; align-items: center; }
.secret-row .secret { flex: 1; margin: 0; }
.secret-row button { margin: 0; }
.big { font-size: 2rem; font-weight: 700; font-variant-numeric: tabular-nums; }
.pager { display: flex; gap: 1rem; margin-top: 1rem; }
.muted { color: var(--muted); }
@media (max-width: 640px) {
  main { margin: 0; padding: 1rem; border-radius: 0; border-left: 0; border-right: 0; }
  table.cards thead { display: none; }
  table.cards tr { display: block; border: 1px solid var(--line); border-radius: 8px; margin-bottom: .75rem; padding: .25rem .5rem; }
  table.cards td { display: flex; justify-content: space-between; gap: 1rem; border: 0; padding: .3rem 0; text-align: right; }
  table.cards td::before { content: attr(data-label); color: var(--muted); font-weight: 600; text-align: left; }
}
`;

export type Section = 'overview' | 'keys' | 'orders' | 'ledger' | 'webhook' | 'exports' | 'batches';

const SECTIONS: [Section, string, string][] = [
  ['overview', 'Balance', '/account'],
  ['keys', 'API keys', '/account/keys'],
  ['orders', 'Orders', '/account/orders'],
  ['ledger', 'Ledger', '/account/ledger'],
  ['webhook', 'Webhook', '/account/webhook'],
  ['batches', 'Batches', '/account/batches'],
  ['exports', 'Exports', '/account/exports'],
];

/** A page of the signed-in area; `refreshSeconds` reloads it while something it shows is in progress. */
export function areaPage(opts: {
  title: string;
  section?: Section;
  email: string;
  csrf: string;
  body: SafeHtml;
  scripts?: string[];
  refreshSeconds?: number;
}): string {
  const nav = html`<nav class="area" aria-label="Account">
  ${SECTIONS.map(([id, label, href]) => html`<a href="${href}"${id === opts.section ? html` aria-current="page"` : ''}>${label}</a>`)}
  <form method="post" action="/account/sign-out">${csrfField(opts.csrf)}<button type="submit" data-testid="sign-out">Sign out</button></form>
</nav>
<p class="muted" data-testid="signed-in-as">Signed in as ${opts.email}</p>`;
  const refresh = opts.refreshSeconds ? html`<meta http-equiv="refresh" content="${opts.refreshSeconds}">` : '';
  return page({
    title: `${opts.title} · Wholesale account`,
    head: html`<style>${new SafeHtml(AREA_STYLE)}</style>${refresh}`,
    body: html`${nav}${opts.body}`,
    scripts: opts.scripts,
  });
}

/** A page outside the signed-in area (sign in, sign up, errors). */
export function publicPage(opts: { title: string; body: SafeHtml }): string {
  return page({
    title: `${opts.title} · Wholesale account`,
    head: html`<style>${new SafeHtml(AREA_STYLE)}</style>`,
    body: opts.body,
  });
}

export function send(res: Response, status: number, body: string, headers: Record<string, string> = {}): void {
  sendPage(res, status, body, headers);
}

/** `2026-11-30 14:05 UTC`: one unambiguous form for every time in the area. */
export function when(d: Date | number | null | undefined): string {
  if (d === null || d === undefined) return '—';
  const date = typeof d === 'number' ? new Date(d * 1000) : d;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The names people see for form fields, for messages about them. */
const FIELD_LABELS: Record<string, string> = {
  email: 'Email',
  password: 'Password',
  name: 'Key name',
  amount: 'Amount',
  currency: 'Currency',
  url: 'Webhook URL',
  scopes: 'Scopes',
  cidrs: 'Networks',
  expires: 'Expires',
  balanceLowThreshold: 'Balance below',
  since: 'Since',
};

/** What a person reads for an error (the API's messages are written for developers). */
export function plainMessage(err: ApiError): string {
  const issue = (err.details?.issues as { path: string; message: string }[] | undefined)?.[0];
  const field = (err.details?.field as string | undefined) ?? issue?.path.split('.').pop();
  switch (err.code) {
    case 'invalid_input':
      if (err.details?.field && !issue) return err.message;
      return field && FIELD_LABELS[field]
        ? `Please check “${FIELD_LABELS[field]}”: ${issue?.message ?? err.message}.`
        : err.message;
    case 'rate_limited': {
      const seconds = Number(err.headers?.['Retry-After'] ?? 60);
      const wait = seconds > 90 ? `${Math.ceil(seconds / 60)} minutes` : `${seconds} seconds`;
      return `${err.message}. Please wait ${wait} and try again.`;
    }
    case 'too_many_pending_topups':
      return 'You already have the most unpaid top-ups allowed. Pay one or let it expire, then try again.';
    case 'payment_provider_error':
    case 'payment_provider_timeout':
      return 'The payment provider did not answer. No top-up was created; please try again in a minute.';
    case 'webhook_not_configured':
      return 'Set a webhook URL first.';
    case 'not_found':
      return 'This page does not exist, or it belongs to another account.';
    case 'service_unavailable':
      return 'A service this page needs is briefly unavailable. Nothing was changed; please try again in a few seconds.';
    case 'unauthorized':
      return err.message;
    default:
      return err.status >= 500 ? 'Something went wrong on our side. Please try again.' : err.message;
  }
}

export { csrfField, errorBox, noticeBox };
