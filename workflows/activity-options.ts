import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';

/**
 * The placement that answers an update's caller (an order, a top-up's checkout): a local activity
 * in the update handler, so the update completes in the first workflow task. Rejections come back
 * as values; only unexpected errors retry, a few times.
 */
export const placementOptions: LocalActivityOptions = {
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
};

/** Idempotent Postgres reads: retried until the database answers, so an outage never fails the workflow. */
export const postgresReadOptions: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
};
