import express, { Router, type ErrorRequestHandler, type Request, type Response } from 'express';
import type { z } from 'zod';
import { UpstreamUnavailableError } from '../redemption-upstream';
import type { SandboxRedemptionUpstream } from './sandbox-upstream';
import {
  NonceCache,
  SessionCheckRequest,
  SubmissionRequest,
  verifyRequest,
  type ErrorCode,
} from '../upstream-protocol';

// The sandbox redemption upstream as a partner would run it: the protocol of
// docs/redemption-upstream.md, served by this service under /sandbox-upstream while
// REDEMPTION_UPSTREAM=sandbox. It checks every request's signature, freshness and nonce like a
// partner must, then hands the call to the scriptable in-process sandbox (redemption-upstream.ts),
// so tests steer it exactly as before while the HTTP adapter is what the service really calls.

const MESSAGES: Record<ErrorCode, string> = {
  invalid_request: 'The request does not follow the protocol',
  invalid_signature: 'The request signature is missing or does not match',
  stale_timestamp: 'The request timestamp is outside the accepted window',
  replayed_request: 'This nonce was already used',
  unknown_ref: 'No submission has this reference',
  key_conflict: 'This key was already submitted with other content',
  unavailable: 'Temporarily unavailable; retry later',
};

function refuse(res: Response, status: number, error: ErrorCode): void {
  res.status(status).json({ error, message: MESSAGES[error] });
}

function bodyOf<T extends z.ZodType>(req: Request, schema: T): z.infer<T> | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse((req.body as Buffer).toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function sandboxUpstreamApi(deps: { secret: string; upstream: SandboxRedemptionUpstream }): Router {
  const { upstream } = deps;
  const nonces = new NonceCache();
  const api = Router({ strict: true });
  // The signature covers the raw bytes, so the body is read as they came and parsed after the check.
  api.use(express.raw({ type: () => true, limit: '64kb' }));
  api.use((req, res, next) => {
    if (!Buffer.isBuffer(req.body)) req.body = Buffer.alloc(0);
    // req.url is the path below the mount point, as the client signed it (relative to its base URL).
    const rejection = verifyRequest(
      deps.secret,
      { method: req.method, path: req.url, body: req.body as Buffer, header: (n) => req.header(n) },
      nonces,
    );
    if (rejection) return void refuse(res, 401, rejection);
    next();
  });

  api.post('/v1/sessions/check', async (req, res) => {
    const body = bodyOf(req, SessionCheckRequest);
    if (!body) return void refuse(res, 400, 'invalid_request');
    try {
      res.json({ verdict: await upstream.validateSession() });
    } catch (err) {
      if (!(err instanceof UpstreamUnavailableError)) throw err;
      refuse(res, 503, 'unavailable');
    }
  });

  api.post('/v1/submissions', async (req, res) => {
    const body = bodyOf(req, SubmissionRequest);
    if (!body) return void refuse(res, 400, 'invalid_request');
    res.json(await upstream.submit(body));
  });

  api.get('/v1/submissions/:ref', async (req, res) => {
    res.json(await upstream.status(req.params.ref));
  });

  api.use((_req, res) => refuse(res, 404, 'invalid_request'));
  // A body too large or unreadable, in the protocol's error shape rather than the API's.
  api.use(((err, _req, res, next) => {
    if (res.headersSent) return next(err);
    const status = (err as { status?: number }).status;
    if (status && status >= 400 && status < 500) return refuse(res, status, 'invalid_request');
    next(err);
  }) satisfies ErrorRequestHandler);
  return api;
}
