import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { ZodObject, ZodType, z } from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../domain/errors';
import type { Principal } from '../services/accounts';
import { ErrorBody } from './openapi';

type Method = 'get' | 'post' | 'put' | 'delete';

export interface RouteDef<P extends ZodObject | undefined, Q extends ZodObject | undefined, B extends ZodType | undefined> {
  method: Method;
  /** Express-style path relative to the router's mount point, e.g. `/orders/:id`. */
  path: string;
  summary: string;
  params?: P;
  query?: Q;
  body?: B;
  headers?: ZodObject;
  response: ZodType;
  errors?: ErrorCode[];
}

type Infer<T> = T extends ZodType ? z.infer<T> : undefined;

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
  principal: Principal;
}

/**
 * Registers a route once: its zod schemas parse the request and describe it in the OpenAPI
 * document, and the handler's return value is the 200 body.
 */
export function addRoute<P extends ZodObject | undefined, Q extends ZodObject | undefined, B extends ZodType | undefined>(
  router: Router,
  registry: OpenAPIRegistry,
  mount: string,
  def: RouteDef<P, Q, B>,
  handler: (input: RouteInput<Infer<P>, Infer<Q>, Infer<B>>) => Promise<unknown>,
): void {
  const errorCodes = ['unauthorized', 'rate_limited', 'invalid_input', ...(def.errors ?? [])] as ErrorCode[];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  registry.registerPath({
    method: def.method,
    path: mount + def.path.replace(/:(\w+)/g, '{$1}'),
    summary: def.summary,
    request: {
      ...(def.params ? { params: def.params } : {}),
      ...(def.query ? { query: def.query } : {}),
      ...(def.headers ? { headers: def.headers } : {}),
      ...(def.body ? { body: { content: { 'application/json': { schema: def.body } } } } : {}),
    },
    responses: {
      200: { description: 'OK', content: { 'application/json': { schema: def.response } } },
      ...Object.fromEntries(
        [...byStatus].map(([status, codes]) => [
          status,
          { description: codes.join(', '), content: { 'application/json': { schema: ErrorBody } } },
        ]),
      ),
    },
  });

  const express: RequestHandler = async (req: Request, res: Response, _next: NextFunction) => {
    const input = {
      params: (def.params ? def.params.parse(req.params) : undefined) as Infer<P>,
      query: (def.query ? def.query.parse(req.query) : undefined) as Infer<Q>,
      body: (def.body ? def.body.parse(req.body ?? {}) : undefined) as Infer<B>,
      req,
      res,
      principal: res.locals.principal as Principal,
    };
    const result = await handler(input);
    res.status(200).json(result);
  };
  router[def.method](def.path, express);
}
