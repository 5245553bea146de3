import { assertContract } from './contract';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/** Real HTTP against the running API; every answer is held to the published OpenAPI document. */
export async function call<T = any>(
  url: string,
  opts: { method?: string; key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.body !== undefined || opts.rawBody !== undefined) headers['content-type'] = 'application/json';
  const method = opts.method ?? (opts.body !== undefined || opts.rawBody !== undefined ? 'POST' : 'GET');
  const res = await fetch(url, { method, headers, body: opts.rawBody ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined) });
  const text = await res.text();
  await assertContract({ method, url, authorization: headers.authorization, status: res.status, headers: res.headers, text });
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers, text };
}

/** A client bound to one API key. */
export function client(apiUrl: string, key: string) {
  return {
    get: <T = any>(path: string) => call<T>(`${apiUrl}${path}`, { key }),
    post: <T = any>(path: string, body: unknown, headers?: Record<string, string>) => call<T>(`${apiUrl}${path}`, { key, body, headers }),
    put: <T = any>(path: string, body: unknown) => call<T>(`${apiUrl}${path}`, { key, body, method: 'PUT' }),
  };
}

/**
 * Polls until `check` returns a value, with a deadline instead of fixed sleeps. A check that
 * throws counts as "not yet" (e.g. a workflow that is about to be started); the last error is
 * reported if the deadline passes.
 */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`condition not reached before the deadline${lastError ? `: ${String(lastError)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
