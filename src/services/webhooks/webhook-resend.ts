import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import { claimUnsentDeliveries, holdEndpoint, resetDeliveries } from '../../db/webhooks-store';
import { ApiError } from '../../domain/errors';
import type { TemporalHandle } from '../../temporal/client';
import { startDeliveryWorkflow } from './webhooks';

// "Resend every failed or cancelled delivery since T" (the API and the account area): a page of
// such deliveries at a time, each reset and retried as a manual retry would. Bounded (at most
// `limit` per call; the caller asks again while there are more) and harmless to repeat (a
// delivery once reset is pending, no longer failed, so a second call leaves it alone).

/** Workflows started at once: a page is sent without holding the request for one start after another. */
const START_CONCURRENCY = 10;

export interface ResendRange {
  /** Unix seconds: deliveries created at or after it. */
  since: number;
  /** Unix seconds: created before it; absent: up to now. */
  until?: number;
  limit: number;
}

export async function resendDeliveries(
  deps: { em: EntityManager; temporal: TemporalHandle; config: Config; onStartError?: (err: unknown) => void },
  accountId: string,
  range: ResendRange,
): Promise<{ ok: true; resent: number; deliveryIds: string[]; hasMore: boolean }> {
  const { ids, hasMore } = await deps.em.transactional(async (tx) => {
    if (!(await holdEndpoint(tx, accountId))) {
      throw new ApiError(
        'webhook_not_configured',
        'No webhook is configured; set one with PUT /webhook before resending',
      );
    }
    const rows = await claimUnsentDeliveries(tx, {
      accountId,
      since: new Date(range.since * 1000),
      until: range.until === undefined ? null : new Date(range.until * 1000),
      limit: range.limit + 1,
    });
    const page = rows.slice(0, range.limit).map((r) => r.id);
    await resetDeliveries(tx, page);
    return { ids: page, hasMore: rows.length > range.limit };
  });
  // The rows are pending now: a workflow that cannot be started here is started by the reconciler.
  for (let i = 0; i < ids.length; i += START_CONCURRENCY) {
    await Promise.all(
      ids
        .slice(i, i + START_CONCURRENCY)
        .map((id) =>
          startDeliveryWorkflow(deps.temporal, deps.config, { id, accountId }, 'retry').catch((err: unknown) =>
            deps.onStartError?.(err),
          ),
        ),
    );
  }
  return { ok: true, resent: ids.length, deliveryIds: ids, hasMore };
}
