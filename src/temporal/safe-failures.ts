import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, Next } from '@temporalio/worker';
import { isDatabaseUnavailable } from '../db/db-errors';
import { sanitizeError } from '../domain/text';

// The second line behind the edge's hygiene rule: whatever an activity throws leaves the worker
// with a message and stack that Temporal's core can encode. A lone surrogate in a failure message
// once made the core bridge fail the whole worker; an error is rewritten here, never dropped.
// (workflows/interceptors.ts does the same for workflow code.)
//
// Postgres being out of reach is not a bug: it becomes a retryable `service_unavailable` in our
// own words, so Temporal retries the activity on its schedule and, once an update's placement
// gives up, its caller gets a retryable 503, never a 500 carrying the driver's message (which
// names internal addresses).

class SafeFailureInbound implements ActivityInboundCallsInterceptor {
  async execute(
    input: Parameters<Next<ActivityInboundCallsInterceptor, 'execute'>>[0],
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ) {
    try {
      return await next(input);
    } catch (err) {
      if (isDatabaseUnavailable(err))
        throw ApplicationFailure.retryable('The database is unavailable; retry shortly', 'service_unavailable');
      throw sanitizeError(err);
    }
  }
}

export const safeActivityFailures: ActivityInterceptorsFactory = () => ({ inbound: new SafeFailureInbound() });
