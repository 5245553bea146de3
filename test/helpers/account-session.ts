import type { Harness } from './harness';

// A browser's part in the account area over plain HTTP: one cookie jar, forms posted
// url-encoded with the CSRF token read from the page, redirects left for the test to follow.

export interface PageResponse {
  status: number;
  headers: Headers;
  text: string;
  location: string | null;
}

export const CSRF_RE = /name="_csrf" value="([^"]+)"/;

export class AccountSession {
  readonly cookies = new Map<string, string>();
  /** The CSRF token of the last page that had a form. */
  csrf: string | undefined;

  /** `headers` go with every request (X-Forwarded-For: a client address, as a trusted proxy says it). */
  constructor(
    readonly baseUrl: string,
    readonly headers: Record<string, string> = {},
  ) {}

  get sid(): string | undefined {
    return this.cookies.get('wholesale.sid');
  }

  private cookieHeader(): Record<string, string> {
    return this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
  }

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(
    method: string,
    path: string,
    body?: string,
    headers: Record<string, string> = {},
  ): Promise<PageResponse> {
    const res = await fetch(new URL(path, this.baseUrl), {
      method,
      body,
      redirect: 'manual',
      headers: { ...this.headers, ...this.cookieHeader(), ...headers },
    });
    this.remember(res);
    const text = await res.text();
    const token = CSRF_RE.exec(text)?.[1];
    if (token) this.csrf = token;
    return { status: res.status, headers: res.headers, text, location: res.headers.get('location') };
  }

  get(path: string): Promise<PageResponse> {
    return this.request('GET', path);
  }

  /** Posts a form with the current CSRF token (unless `_csrf` is given, or `csrf: false`). */
  post(path: string, fields: Record<string, string> = {}, opts: { csrf?: boolean } = {}): Promise<PageResponse> {
    const withToken = opts.csrf === false || '_csrf' in fields ? fields : { _csrf: this.csrf ?? '', ...fields };
    return this.request('POST', path, new URLSearchParams(withToken).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
  }

  /** Loads a form's page first, so the post carries that page's token. */
  async submit(formPage: string, path: string, fields: Record<string, string> = {}): Promise<PageResponse> {
    await this.get(formPage);
    return this.post(path, fields);
  }
}

let counter = 0;

/** A new reseller signed up through the area; returns the session, email and password. */
export async function signedUp(h: Harness, opts: { password?: string } = {}) {
  const session = new AccountSession(h.baseUrl);
  const email = `reseller-${process.pid}-${Date.now()}-${counter++}@example.com`;
  const password = opts.password ?? `pw-${Math.random().toString(36).slice(2)}-long-enough`;
  const res = await session.submit('/account/sign-up', '/account/sign-up', { email, password });
  if (res.status !== 303) throw new Error(`sign-up answered ${res.status}: ${res.text.slice(0, 300)}`);
  const [{ account_id: accountId }] = await h.services.orm.em
    .fork()
    .execute<{ account_id: string }[]>('select account_id from users where email = ?', [email]);
  return { session, email, password, accountId };
}

/** The full key shown once on the page that made it. */
export function shownKey(text: string): string {
  const key = /data-testid="new-key">(wsk_[A-Za-z0-9_-]+)</.exec(text)?.[1];
  if (!key) throw new Error('no key on the page');
  return key;
}
