import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { isErrorCode } from '../src/domain/errors';

/**
 * What an update handler throws when its activity failed: the failure with the spec's error code
 * (so the caller gets that code: a business error, or `service_unavailable` for a database
 * outage), or internal_error. A regular activity's failure arrives wrapped in an ActivityFailure;
 * a local activity's, once its retries are spent, as the ApplicationFailure itself. Throwing a
 * failure fails the update, never the workflow. A cancellation is no failure of the handler's:
 * handlers rethrow it as it is (`isCancellation`) before asking for this mapping.
 */
export function updateFailure(err: unknown): ApplicationFailure {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  if (failure instanceof ApplicationFailure && isErrorCode(failure.type)) return failure;
  return ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), 'internal_error');
}
