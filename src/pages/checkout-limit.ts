import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { rateLimit, toApiError } from '../http/middleware';
import { html, page, sendPage } from './page-layout';

// A checkout link needs no key, and each view of it reads Postgres (and draws a QR code), so the
// page and its status JSON share one budget per client IP (CHECKOUT_RATE_LIMIT_PER_MINUTE): ample
// for a payer whose page polls every few seconds, not for someone walking ids.

export function checkoutRateLimit(deps: { orm: Orm; config: Config }): {
  limit: RequestHandler<{ id: string }>;
  limitedPage: ErrorRequestHandler;
} {
  const limit = rateLimit(deps, {
    name: 'checkout',
    limit: deps.config.CHECKOUT_RATE_LIMIT_PER_MINUTE,
    windowSeconds: 60,
    per: 'ip',
  });
  /** The refusal as a small page for a person; the status JSON keeps the API's error body. */
  const limitedPage: ErrorRequestHandler = (err, req, res, next) => {
    const e = toApiError(err);
    if (e.code !== 'rate_limited' || req.path.endsWith('.json')) return next(err);
    sendPage(
      res,
      429,
      page({
        title: 'Too many requests',
        body: html`<h1>Too many requests</h1><p class="lead" data-testid="rate-limited">This page was opened too often from your network. Wait a minute, then reload it.</p>`,
      }),
      e.headers,
    );
  };
  return { limit, limitedPage };
}
