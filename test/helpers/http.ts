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

export { eventually } from './eventually';
