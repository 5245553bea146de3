import type { Response } from 'express';
import type { StaffRole } from '../db/staff-store';
import type { ApiError } from '../domain/errors';
import { html, page, SafeHtml, sendPage } from '../pages/page-layout';
import { plainMessage as accountMessage, when } from '../pages/account/account-layout';
import { csrfField, errorBox, noticeBox } from '../pages/signed-in-area';

// The console's frame: the shared page (escaping by default, stylesheet, security headers,
// no-store) with a wide layout, a navigation that shows each role only what it may use, and the
// form pieces (CSRF field, reason box, error and notice boxes).

const CONSOLE_STYLE = `
main { max-width: 76rem; }
nav.console { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; margin: -0.5rem 0 1rem; padding-bottom: .75rem; border-bottom: 1px solid var(--line); }
nav.console a { color: var(--accent); text-decoration: none; font-weight: 600; }
nav.console a[aria-current="page"] { color: var(--ink); text-decoration: underline; }
nav.console form { margin: 0 0 0 auto; display: flex; gap: .5rem; }
nav.console input { width: 16rem; padding: .3rem .5rem; }
nav.console button { margin: 0; padding: .3rem .8rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; }
table { width: 100%; border-collapse: collapse; font-size: .9rem; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
button.secondary { background: #5b6475; }
button.danger { background: var(--bad); }
form.action { margin-top: 1rem; padding: 1rem; border: 1px solid var(--line); border-radius: 8px; }
form.action button { margin-top: .75rem; }
form.inline { display: inline; }
form.inline button { margin: 0; padding: .3rem .7rem; font-size: .85rem; }
.secret { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; padding: .6rem .7rem; background: #f4f6fa; border: 1px dashed var(--accent); border-radius: 8px; }
.muted { color: var(--muted); }
.role { font-size: .8rem; padding: .1rem .5rem; border-radius: 999px; background: #eef0f4; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: .8rem; background: #f4f6fa; padding: .5rem; border-radius: 6px; }
`;

export interface Viewer {
  name: string;
  email: string;
  role: StaffRole;
  csrf: string;
}

type Section = 'queue' | 'redemptions' | 'search' | 'prices' | 'audit' | 'staff';

const SECTIONS: [Section, string, string, StaffRole][] = [
  ['queue', 'Needs attention', '/console', 'viewer'],
  ['redemptions', 'Redemption queue', '/console/redemptions', 'viewer'],
  ['search', 'Search', '/console/search', 'viewer'],
  ['prices', 'Prices', '/console/prices', 'viewer'],
  ['audit', 'Audit log', '/console/audit', 'admin'],
  ['staff', 'Staff', '/console/staff', 'admin'],
];

const RANK: Record<StaffRole, number> = { viewer: 0, support: 1, admin: 2 };

/** True when `role` may do what `needed` may. */
export const allows = (role: StaffRole, needed: StaffRole) => RANK[role] >= RANK[needed];

/** The reason every action asks for; it is recorded with the action and in the audit log. */
export const reasonField = (
  id: string,
) => html`<label for="${id}">Reason <span class="hint">(recorded with your name)</span></label>
<input id="${id}" name="reason" maxlength="2000" required data-testid="${id}">`;

export function consolePage(v: Viewer, opts: { title: string; section?: Section; body: SafeHtml }): string {
  const nav = html`<nav class="console" aria-label="Console">
  ${SECTIONS.filter(([, , , needed]) => allows(v.role, needed)).map(
    ([id, label, href]) => html`<a href="${href}"${id === opts.section ? html` aria-current="page"` : ''}>${label}</a>`,
  )}
  <form method="get" action="/console/search" role="search"><input name="q" placeholder="Order id, your id, account, email" aria-label="Search"><button type="submit" class="secondary">Search</button></form>
  <form method="post" action="/console/sign-out">${csrfField(v.csrf)}<button type="submit" class="secondary" data-testid="sign-out">Sign out</button></form>
</nav>
<p class="muted" data-testid="signed-in-as">${v.name} · ${v.email} <span class="role" data-testid="role">${v.role}</span></p>`;
  return page({
    title: `${opts.title} · Wholesale console`,
    head: html`<style>${new SafeHtml(CONSOLE_STYLE)}</style>`,
    body: html`${nav}${opts.body}`,
  });
}

export function publicConsolePage(opts: { title: string; body: SafeHtml }): string {
  return page({
    title: `${opts.title} · Wholesale console`,
    head: html`<style>${new SafeHtml(CONSOLE_STYLE)}</style>`,
    body: opts.body,
  });
}

export function send(res: Response, status: number, body: string, headers: Record<string, string> = {}): void {
  sendPage(res, status, body, headers);
}

/** What a person reads for an error; the console says "order", not "page", for a missing one. */
export function plainMessage(err: ApiError): string {
  if (err.code === 'not_found' || err.code === 'claim_conflict') return err.message;
  const issue = (err.details?.issues as { path: string; message: string }[] | undefined)?.[0];
  if (err.code === 'invalid_input' && issue) return `Please check “${issue.path || 'the form'}”: ${issue.message}.`;
  return accountMessage(err);
}

export { html, SafeHtml, when };

export { csrfField, errorBox, noticeBox };
