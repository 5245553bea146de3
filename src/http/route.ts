import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { ZodObject, ZodType, z } from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../domain/errors';
import { KEY_SCOPES, type KeyScope } from '../domain/key-scopes';
import type { Principal } from '../services/accounts/accounts';
import { assertScope } from '../services/accounts/key-access';
import { assertCleanInput } from './hygiene';
import { authenticated, principalOf } from './middleware';
import { ErrorBody, ERROR_MEANING, errorExample, HEADERS, type HeaderName } from './openapi';

type Method = 'get' | 'post' | 'put' | 'delete';

export interface RouteDef<
  P extends ZodObject | undefined,
  Q extends ZodObject | undefined,
  B extends ZodType | undefined,
> {
  method: Method;
  /** Express-style path relative to the router's mount point, e.g. `/orders/:id`. */
  path: string;
  /** Stable, for generated clients: `createOrder`, `listTransactions`. */
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  params?: P;
  query?: Q;
  body?: B;
  headers?: ZodObject;
  response: ZodType;
  /** Headers the 200 answer may carry besides X-Request-Id and the rate-limit ones. */
  responseHeaders?: HeaderName[];
  /** The operation's own error codes (spec 7); the ones every operation can answer are added. */
  errors?: ErrorCode[];
  /**
   * `api`: the reseller's bearer key and its rate limit (default); `admin`: the admin token;
   * `link`: no key, the request's own link is its credential (an export's download link).
   */
  auth?: 'api' | 'admin' | 'link';
  /**
   * The key scope the operation needs (`api` only). A GET needs `read` unless it says otherwise;
   * any other method that names none needs a key with every scope.
   */
  scope?: KeyScope;
  /** The 200 answer is a CSV file (text/csv) that the handler writes itself (src/http/csv-response.ts). */
  csv?: boolean;
}

type Infer<T> = T extends ZodType ? z.infer<T> : undefined;

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** The headers the route declares, parsed by its schema (lower-case names). */
  headers: Record<string, unknown>;
  req: Request;
  res: Response;
  principal: Principal;
}

/** What any operation may answer, besides its own errors. */
const COMMON_ERRORS: Record<'api' | 'admin' | 'link', ErrorCode[]> = {
  api: [
    'invalid_input',
    'unauthorized',
    'insufficient_scope',
    'ip_not_allowed',
    'key_expired',
    'rate_limited',
    'internal_error',
    'service_unavailable',
  ],
  admin: ['invalid_input', 'unauthorized', 'internal_error', 'service_unavailable'],
  link: ['invalid_input', 'internal_error', 'service_unavailable'],
};

const RATE_LIMIT_HEADERS: HeaderName[] = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

function headersOf(names: HeaderName[]) {
  return Object.fromEntries(['X-Request-Id' as const, ...names].map((n) => [n, HEADERS[n]]));
}

/** The responses of an operation: 200, one entry per error status with an example per code, and default. */
function responsesOf(def: RouteDef<ZodObject | undefined, ZodObject | undefined, ZodType | undefined>) {
  const auth = def.auth ?? 'api';
  const limits = auth === 'api' ? RATE_LIMIT_HEADERS : [];
  const codes = [...new Set([...COMMON_ERRORS[auth], ...(def.errors ?? [])])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const errorResponse = (status: number, list: ErrorCode[]) => ({
    description: list.map((c) => `\`${c}\`: ${ERROR_MEANING[c]}`).join('\n\n'),
    headers: headersOf([...limits, ...(status === 429 || status === 503 ? (['Retry-After'] as HeaderName[]) : [])]),
    content: {
      'application/json': { schema: ErrorBody, examples: Object.fromEntries(list.map((c) => [c, errorExample(c)])) },
    },
  });
  return {
    200: {
      description: def.csv ? 'A CSV file (RFC 4180, UTF-8, a header record first)' : 'OK',
      headers: headersOf([...limits, ...(def.responseHeaders ?? [])]),
      content: def.csv ? { 'text/csv': { schema: def.response } } : { 'application/json': { schema: def.response } },
    },
    ...Object.fromEntries(
      [...byStatus].sort(([a], [b]) => a - b).map(([status, list]) => [status, errorResponse(status, list)]),
    ),
    default: {
      description: 'Any other error, with the same body',
      headers: headersOf([]),
      content: { 'application/json': { schema: ErrorBody } },
    },
  };
}

function scopeOf(def: { method: Method; scope?: KeyScope }): KeyScope | 'every' {
  return def.scope ?? (def.method === 'get' ? 'read' : 'every');
}

/**
 * Registers a route once: its zod schemas parse the request and describe it in the OpenAPI
 * document, and the handler's return value is the 200 body.
 */
export function addRoute<
  P extends ZodObject | undefined,
  Q extends ZodObject | undefined,
  B extends ZodType | undefined,
>(
  router: Router,
  registry: OpenAPIRegistry,
  mount: string,
  def: RouteDef<P, Q, B>,
  handler: (input: RouteInput<Infer<P>, Infer<Q>, Infer<B>>) => Promise<unknown>,
): void {
  const auth = def.auth ?? 'api';
  const scope = scopeOf(def);
  registry.registerPath({
    method: def.method,
    path: mount + def.path.replace(/:(\w+)/g, '{$1}'),
    operationId: def.operationId,
    tags: [def.tag],
    summary: def.summary,
    ...(def.description ? { description: def.description } : {}),
    // OpenAPI 3.1 lets a bearer requirement name the roles it needs: here, the key's scopes.
    ...(auth === 'api' ? { security: [{ bearer: scope === 'every' ? [...KEY_SCOPES] : [scope] }] } : {}),
    ...(auth === 'link' ? { security: [] } : {}),
    request: {
      ...(def.params ? { params: def.params } : {}),
      ...(def.query ? { query: def.query } : {}),
      ...(def.headers ? { headers: def.headers } : {}),
      ...(def.body ? { body: { required: true, content: { 'application/json': { schema: def.body } } } } : {}),
    },
    responses: responsesOf(def),
  });

  const headerNames = Object.keys(def.headers?.shape ?? {});
  const express: RequestHandler = async (req: Request, res: Response, _next: NextFunction) => {
    // The template this request matched, for the metrics (an error handler later sees another baseUrl).
    res.locals.routeTemplate = `${req.baseUrl}${def.path}`;
    // Before the request is read: a key without the scope learns nothing from a validation error.
    if (auth === 'api') assertScope(authenticated(res), scope);
    const headers = Object.fromEntries(headerNames.map((h) => [h, req.header(h)]));
    assertCleanInput({ params: req.params, query: req.query, body: req.body, header: headers });
    const input = {
      headers: def.headers ? def.headers.parse(headers) : {},
      params: (def.params ? def.params.parse(req.params) : undefined) as Infer<P>,
      query: (def.query ? def.query.parse(req.query) : undefined) as Infer<Q>,
      body: (def.body ? def.body.parse(req.body ?? {}) : undefined) as Infer<B>,
      req,
      res,
      principal: principalOf(res) as Principal,
    };
    const result = await handler(input);
    if (!def.csv) res.status(200).json(result);
  };
  router[def.method](def.path, express);
}
