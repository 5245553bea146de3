import type { RequestHandler } from 'express';
import { httpDuration, httpRequests } from './registry';

/**
 * Rate, errors and duration of every request, labelled by the route template that answered
 * (`/wholesale/v1/orders/:id`), never by the path itself. A request no route took (refused by
 * the edge, the key or the rate limit first, or unknown) counts under its surface, `/wholesale/v1/*`.
 */
export const httpMetrics: RequestHandler = (req, res, next) => {
  const stop = httpDuration.startTimer();
  res.on('finish', () => {
    const route: string =
      res.locals.routeTemplate ??
      (req.route?.path !== undefined ? `${req.baseUrl}${String(req.route.path)}` : `${req.baseUrl || ''}/*`);
    const method = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'].includes(req.method)
      ? req.method
      : 'OTHER';
    httpRequests.inc({ route, method, status: String(res.statusCode) });
    stop({ route, method });
  });
  next();
};
