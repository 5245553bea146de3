import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';

// The workflows' activity options, one preset per kind of step. Retries are for infrastructure
// (a database, a node, a worker gone); business outcomes come back as values or non-retryable
// failures.

/**
 * The placement that answers an update's caller (an order, a top-up's checkout): a local activity
 * in the update handler, so the update completes in the first workflow task. Rejections come back
 * as values; only unexpected errors retry, a few times.
 */
export const placementOptions: LocalActivityOptions = {
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
};

/**
 * Idempotent Postgres steps (reads, settlements, state changes): retried until the database
 * answers, however long it is down, so an outage delays a workflow and never fails it.
 */
export const untilPostgresAnswers: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};

/** As `untilPostgresAnswers`, for a step that may refuse (these error types fail at once). */
export function untilPostgresAnswersOrRefuses(...refusals: string[]): ActivityOptions {
  return { ...untilPostgresAnswers, retry: { ...untilPostgresAnswers.retry, nonRetryableErrorTypes: refusals } };
}

/**
 * A call to an outside party that the workflow asks again on its own cadence (a provider's status,
 * a chain scan, a report): a few tries, then the next tick or run asks again.
 */
export function fewTries(
  startToCloseTimeout: ActivityOptions['startToCloseTimeout'],
  extra: Partial<ActivityOptions> = {},
): ActivityOptions {
  return {
    startToCloseTimeout,
    ...extra,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: 3,
      ...extra.retry,
    },
  };
}
