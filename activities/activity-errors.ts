import { ApiError } from '../src/domain/errors';
import { safeText } from '../src/domain/text';
import { toApplicationFailure } from '../src/temporal/temporal-errors';
import type { Rejected } from '../src/contracts/orders-contract';

/** Runs an activity body, turning business errors into non-retryable failures with their code. */
export async function businessErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError) throw toApplicationFailure(err);
    throw err;
  }
}

/**
 * Runs a placement, answering an expected business outcome (an ApiError with the spec's code) as
 * a rejection value: no failed activity, no retry, no stack trace in the log. Anything else is
 * unexpected and still fails, to be retried.
 */
export async function asRejection<T extends object>(fn: () => Promise<T>): Promise<T | Rejected> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return {
      outcome: 'rejected',
      rejection: {
        code: err.code,
        message: safeText(err.message, 500),
        ...(err.details ? { details: err.details } : {}),
      },
    };
  }
}
