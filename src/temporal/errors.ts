import { ApplicationFailure } from '@temporalio/common';
import { ApiError, isErrorCode } from '../domain/errors';

// Business errors cross Temporal as non-retryable ApplicationFailures whose `type` is the spec's
// error code, and turn back into ApiErrors at the HTTP edge.

export function toApplicationFailure(err: ApiError): ApplicationFailure {
  return ApplicationFailure.create({
    message: err.message,
    type: err.code,
    nonRetryable: true,
    details: err.details ? [err.details] : [],
  });
}

/** Finds an ApplicationFailure with a spec error code anywhere in a Temporal error's cause chain. */
export function apiErrorFromTemporal(err: unknown): ApiError | undefined {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure && isErrorCode(e.type)) {
      const details = (e.details?.[0] ?? undefined) as Record<string, unknown> | undefined;
      return new ApiError(e.type, e.message, details);
    }
  }
  return undefined;
}
