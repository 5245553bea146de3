import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/**
 * What an update handler throws when its activity failed: the business error with its spec code
 * (so the caller gets that code), or internal_error. Throwing a failure fails the update, never
 * the workflow.
 */
export function updateFailure(err: unknown): ApplicationFailure {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) return err.cause;
  return ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), 'internal_error');
}
