import type { Request, Response } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiError } from '../../domain/errors';
import type { AppContext } from '../../http/context';
import { toApiError } from '../../http/middleware';

/** What a handler of the signed-in area works with: the user's account, never one named by the request. */
export interface Area {
  em: EntityManager;
  accountId: string;
  email: string;
  csrf: string;
}

export function area(req: Request, res: Response, ctx: AppContext): Area {
  return {
    em: ctx.orm.em.fork(),
    accountId: res.locals.user.accountId,
    email: res.locals.user.email,
    csrf: req.csrfToken!(),
  };
}

/**
 * An error a form shows next to its fields (a refused value, a limit, a provider that did not
 * answer); anything else, a bug or an outage, goes on to the area's error page.
 */
export function formError(err: unknown): ApiError {
  const apiError = toApiError(err);
  const shown =
    apiError.status < 500 || apiError.code === 'payment_provider_error' || apiError.code === 'payment_provider_timeout';
  if (!shown) throw err;
  return apiError;
}

/** A notice chosen by a redirect's `?notice=`: only known keys are shown, never text from the URL. */
export function noticeFrom(req: Request, notices: Record<string, string>): string | undefined {
  const key = req.query.notice;
  return typeof key === 'string' && Object.prototype.hasOwnProperty.call(notices, key) ? notices[key] : undefined;
}
