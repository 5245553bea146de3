import { WorkflowUpdateFailedError, type WithStartWorkflowOperation } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition, type Workflow } from '@temporalio/common';
import type { ApiError } from '../domain/errors';
import type { TemporalHandle } from './client';
import { apiErrorFromTemporal, isTemporalUnavailable } from './temporal-errors';

export interface UpdateWithStartOptions<Args extends unknown[]> {
  args: Args;
  /** Kept across tries: Temporal answers a repeated update id with the first outcome. */
  updateId?: string;
  /**
   * Tries in all. A run that closes between the update and its acceptance is followed by a new
   * run on the next try (the starter's reuse policy allows it), which finds the facts in Postgres.
   */
  attempts: number;
  /**
   * Bound each try by the placement deadline (PLACEMENT_TIMEOUT_MS): with no worker polling (all
   * killed, a deploy) the caller gets a retryable 503, not a hang.
   */
  withDeadline: boolean;
  /**
   * What the failure that ends the tries means to the caller (one that is neither a business
   * error nor an outage), or undefined to let it through as it is.
   */
  onGiveUp?: (err: unknown) => Promise<ApiError | undefined> | ApiError | undefined;
}

/**
 * The server's rejection of an update no worker processed: with several workers and concurrent
 * updates of one run, core can complete a task without the update's message (it logs "unprocessed
 * protocol messages"). No handler ran and nothing was recorded, so the same update id is sent again.
 */
function unprocessed(err: WorkflowUpdateFailedError): boolean {
  return err.cause instanceof ApplicationFailure && err.cause.type === 'UnprocessedUpdate';
}

/**
 * Update-with-start, with Temporal's answers turned into the API's: a business rejection thrown
 * by the workflow (a spec error code as the failure type) is that ApiError, and a Temporal server
 * out of reach is left for the edge to answer as a retryable 503 (see isTemporalUnavailable).
 */
export async function updateWithStart<W extends Workflow, Ret, Args extends unknown[]>(
  temporal: TemporalHandle,
  starter: { withStart(): WithStartWorkflowOperation<W> },
  update: UpdateDefinition<Ret, Args>,
  opts: UpdateWithStartOptions<Args>,
): Promise<Ret> {
  const { client } = temporal;
  for (let attempt = 1; ; attempt++) {
    const startWorkflowOperation = starter.withStart();
    const send = () =>
      client.workflow.executeUpdateWithStart(update, {
        args: opts.args,
        updateId: opts.updateId,
        startWorkflowOperation,
      });
    try {
      return await (opts.withDeadline ? client.withDeadline(Date.now() + temporal.placementDeadlineMs, send) : send());
    } catch (err) {
      const apiError = apiErrorFromTemporal(err);
      if (apiError) throw apiError;
      if (isTemporalUnavailable(err)) throw err;
      if ((err instanceof WorkflowUpdateFailedError && !unprocessed(err)) || attempt >= opts.attempts)
        throw (await opts.onGiveUp?.(err)) ?? err;
    }
  }
}
