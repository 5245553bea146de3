import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import { defaultRedemptionUpstream, type RedemptionUpstream, type UpstreamStatus } from '../src/providers/redemption-upstream';
import {
  beginAttempt,
  finishAttempt,
  recordUpstreamRef,
  releaseAttemptResources,
  upstreamSubmission,
} from '../src/services/redemption-attempts';
import type { AttemptOutcome, AttemptRef } from '../src/temporal/redemptions';

/** The redemption workflow's bridge to Postgres and the upstream; each step is idempotent. */
export function createRedemptionActivities(deps: { orm: Orm; config: Config; upstream?: RedemptionUpstream }) {
  const upstream = deps.upstream ?? defaultRedemptionUpstream();
  return {
    async beginRedemptionAttempt(ref: AttemptRef): Promise<{ state: 'ready' | 'finished'; manual: boolean }> {
      const begun = await beginAttempt(deps.orm.em.fork(), ref);
      // Retryable: the submission that started this run may not have committed yet.
      if (!begun) throw ApplicationFailure.retryable(`attempt ${ref.redemptionId}:${ref.attempt} is not visible`, 'AttemptNotVisible');
      return begun;
    },

    /** Submits once per attempt: a retry finds the recorded ref, and the upstream dedupes on the attempt key. */
    async submitRedemptionUpstream(input: AttemptRef & { secrets?: Record<string, string> }): Promise<{ ref: string }> {
      const em = deps.orm.em.fork();
      const { upstreamRef, submission } = await upstreamSubmission(em, input, input.secrets);
      if (upstreamRef) return { ref: upstreamRef };
      const { ref } = await upstream.submit(submission);
      await recordUpstreamRef(em, input, ref);
      return { ref };
    },

    async redemptionUpstreamStatus(ref: string): Promise<UpstreamStatus> {
      return upstream.status(ref);
    },

    async finishRedemptionAttempt(input: AttemptRef & { outcome: AttemptOutcome; secrets?: Record<string, string> }): Promise<void> {
      await finishAttempt(deps.orm.em.fork(), input, input.outcome, input.secrets);
    },

    async releaseRedemptionResources(ref: AttemptRef): Promise<void> {
      await releaseAttemptResources(deps.orm.em.fork(), ref);
    },
  };
}

export type RedemptionActivities = ReturnType<typeof createRedemptionActivities>;
