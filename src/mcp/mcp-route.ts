import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { Router } from 'express';
import type { AppContext } from '../http/context';
import { authenticated, bearerAuth } from '../http/middleware';
import { createMcpServer } from './server';

/**
 * `{base_url}/mcp` (spec 4.7): Streamable HTTP in stateless mode, a new server and transport per
 * POST. The bearer key and the per-key request budget are checked before any MCP handling, with
 * the same middleware and bucket as REST, so a bad key is the spec's 401 body and REST and MCP
 * share one budget per key.
 */
export function mcpRoutes(ctx: AppContext): Router {
  const router = Router();
  router.use(bearerAuth(ctx, { name: 'api', limit: ctx.config.RATE_LIMIT_PER_MINUTE, windowSeconds: 60 }));

  router.post('/', express.json({ limit: '256kb' }), async (req, res) => {
    // JSON-RPC 2.0: an empty batch is an Invalid Request, answered with one error object. The
    // transport would take it as "nothing to answer" and send an empty 202.
    if (Array.isArray(req.body) && req.body.length === 0) {
      res
        .status(400)
        .json({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: empty batch' }, id: null });
      return;
    }
    const server = createMcpServer({ ctx, principal: authenticated(res), requestId: res.locals.requestId });
    // Plain JSON responses: every tool answers within the request, so no SSE stream is needed.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });

  // Stateless: there is no session to stream from (GET) or to end (DELETE).
  router.all('/', (_req, res) => {
    res.status(405).setHeader('Allow', 'POST');
    res.json({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Method not allowed: send JSON-RPC requests with POST' },
      id: null,
    });
  });
  return router;
}
