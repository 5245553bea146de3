import type { Response } from 'express';

// The shared frame of the server-rendered pages (redemption site, hosted checkout): escaping by
// default, one stylesheet, and headers that keep the pages from being framed, cached or sniffed.

/** HTML that is already safe to emit; everything else interpolated into `html` is escaped. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function render(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(value);
}

/** Tagged template: interpolated values are escaped unless they are SafeHtml (or arrays of it). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1];
  });
  return new SafeHtml(out);
}

const STYLE = `
:root { color-scheme: light; --ink: #1d2433; --muted: #5b6475; --line: #d9dee8; --accent: #2b59c3; --ok: #1f7a4d; --bad: #b3261e; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f4f6fa; }
main { max-width: 34rem; margin: 3rem auto; padding: 2rem; background: #fff; border: 1px solid var(--line); border-radius: 12px; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
p.lead { color: var(--muted); margin-top: 0; }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
.hint { color: var(--muted); font-size: .875rem; font-weight: 400; }
input, textarea, select { width: 100%; padding: .6rem .7rem; font: inherit; border: 1px solid var(--line); border-radius: 8px; }
input:focus, textarea:focus, select:focus { outline: 2px solid var(--accent); outline-offset: 1px; }
textarea { min-height: 7rem; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .875rem; }
.invalid input, .invalid textarea, .invalid select { border-color: var(--bad); }
button, .button { display: inline-block; margin-top: 1.5rem; padding: .65rem 1.2rem; font: inherit; font-weight: 600; color: #fff;
  background: var(--accent); border: 0; border-radius: 8px; cursor: pointer; text-decoration: none; }
.error { padding: .75rem 1rem; border-radius: 8px; background: #fdecea; color: var(--bad); border: 1px solid #f5c2bd; }
.notice { padding: .75rem 1rem; border-radius: 8px; background: #eef3fd; border: 1px solid #c9d7f5; }
.code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .05em; }
.status { display: inline-block; padding: .2rem .7rem; border-radius: 999px; font-weight: 600; background: #eef0f4; }
.status.fulfilled { background: #e3f4ea; color: var(--ok); }
.status.failed { background: #fdecea; color: var(--bad); }
ol.steps { padding-left: 1.25rem; color: var(--muted); }
ol.steps li.done { color: var(--ok); }
ol.steps li.current { color: var(--ink); font-weight: 600; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dt { color: var(--muted); }
dd { margin: 0; }
footer { margin-top: 2rem; color: var(--muted); font-size: .8rem; }
`;

export function page(opts: { title: string; body: SafeHtml; scripts?: string[]; head?: SafeHtml }): string {
  return `<!doctype html>${html`<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${opts.title}</title>
<style>${new SafeHtml(STYLE)}</style>
${opts.head}
${(opts.scripts ?? []).map((src) => html`<script src="${src}" defer></script>`)}
</head><body><main>${opts.body}</main></body></html>`}`;
}

/** Pages take no third-party content, cannot be framed, and are never cached (they may show codes). */
export const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Frame-Options': 'DENY',
};

export function sendPage(res: Response, status: number, body: string, headers: Record<string, string> = {}): void {
  res
    .status(status)
    .set({ ...PAGE_HEADERS, ...headers, 'Content-Type': 'text/html; charset=utf-8' })
    .send(body);
}
