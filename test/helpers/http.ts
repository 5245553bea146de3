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
  const res = await fetch(url, {
    method,
    headers,
    body: opts.rawBody ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined),
  });
  const text = await res.text();
  await assertContract({
    method,
    url,
    authorization: headers.authorization,
    status: res.status,
    headers: res.headers,
    text,
  });
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
    post: <T = any>(path: string, body: unknown, headers?: Record<string, string>) =>
      call<T>(`${apiUrl}${path}`, { key, body, headers }),
    put: <T = any>(path: string, body: unknown) => call<T>(`${apiUrl}${path}`, { key, body, method: 'PUT' }),
  };
}

/**
 * POSTs as a client following the spec's retry rule: a 503 with `retryable: true` is sent again,
 * unchanged (so under the same externalOrderId), after its Retry-After, until another answer or
 * `timeoutMs`. For tests that place right after starting a worker process: on a loaded machine its
 * start can outlast PLACEMENT_TIMEOUT_MS, and the service rightly answers "retry".
 */
export async function postRetrying<T = any>(
  api: ReturnType<typeof client>,
  path: string,
  body: unknown,
  timeoutMs = 90_000,
): Promise<ApiResponse<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api.post<T>(path, body);
    if (res.status !== 503 || (res.body as { retryable?: boolean })?.retryable !== true || Date.now() > deadline)
      return res;
    const waitS = Math.min(5, Number(res.headers.get('retry-after')) || 1);
    await new Promise((r) => setTimeout(r, waitS * 1000));
  }
}

export { eventually } from './eventually';
