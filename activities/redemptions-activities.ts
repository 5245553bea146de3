import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import type { RedemptionUpstream } from '../src/providers/redemption-upstream';
import { parseKeyRing } from '../src/temporal/codec';
import {
  beginAttempt,
  finishAttempt,
  recordUpstreamRef,
  refreshUpstream,
  releaseAttemptResources,
  upstreamSubmission,
} from '../src/services/redemptions/redemption-attempts';
import type { AttemptOutcome, AttemptRef, DecisionRef, UpstreamState } from '../src/contracts/redemptions-contract';

/** The redemption workflow's bridge to Postgres and the upstream; each step is idempotent. */
export function createRedemptionActivities(deps: { orm: Orm; config: Config; upstream: RedemptionUpstream }) {
  const { upstream } = deps;
  const keys = parseKeyRing(deps.config.TEMPORAL_PAYLOAD_KEYS);
  return {
    async beginRedemptionAttempt(ref: AttemptRef): Promise<{ state: 'ready' | 'finished'; manual: boolean }> {
      const begun = await beginAttempt(deps.orm.em.fork(), ref);
      // Retryable: the submission that started this run may not have committed yet.
      if (!begun)
        throw ApplicationFailure.retryable(
          `attempt ${ref.redemptionId}:${ref.attempt} is not visible`,
          'AttemptNotVisible',
        );
      return begun;
    },

    /**
     * Submits once per attempt: a retry finds the recorded ref, and the upstream dedupes on the
     * attempt key. The password values come from where the submission staged them, encrypted.
     */
    async submitRedemptionUpstream(input: AttemptRef): Promise<{ ref: string }> {
      const em = deps.orm.em.fork();
      const { upstreamRef, submission } = await upstreamSubmission(em, keys, input);
      if (upstreamRef) return { ref: upstreamRef };
      const { ref } = await upstream.submit(submission);
      await recordUpstreamRef(em, input, ref);
      return { ref };
    },

    /** The upstream's status; its completion note is kept in Postgres, not returned. */
    async redemptionUpstreamStatus(input: AttemptRef & { upstreamRef: string }): Promise<UpstreamState> {
      return refreshUpstream(deps.orm.em.fork(), keys, input, await upstream.status(input.upstreamRef));
    },

    /** Records the outcome; one from an operator's decision only when Postgres backs that decision. */
    async finishRedemptionAttempt(
      input: AttemptRef & { outcome: AttemptOutcome; decision?: DecisionRef },
    ): Promise<'finished' | 'refused'> {
      const { redemptionId, attempt } = input;
      const recorded = await finishAttempt(
        deps.orm.em.fork(),
        keys,
        { redemptionId, attempt },
        input.outcome,
        input.decision,
      );
      if (recorded === 'refused')
        log.warn('operator decision with nothing on record behind it: refused', { redemptionId, attempt });
      return recorded;
    },

    async releaseRedemptionResources(ref: AttemptRef): Promise<void> {
      await releaseAttemptResources(deps.orm.em.fork(), ref);
    },
  };
}

export type RedemptionActivities = ReturnType<typeof createRedemptionActivities>;
