import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../codes';
import {
  openTopupUpdate,
  type OpenTopupRequest,
  type TopupCreateResponse,
  type TopupOpening,
} from '../../contracts/topups-contract';
import { OrderSchema, type Order } from '../../db/entities/all-entities';
import { topupChecks } from '../../db/orders-store';
import { ApiError } from '../../domain/errors';
import { fromDb, parseDecimal, toDecimal } from '../../domain/money';
import { rateLimited, topupsCreated } from '../../metrics/registry';
import type { TemporalHandle } from '../../temporal/client';
import { openSecrets, type AnswerKey } from '../../temporal/sealed-answer';
import { topupStarter } from '../../temporal/starters';
import type { TimingConfig } from '../../temporal/timing';
import { pruneSometimes, rateLimitResult, rateWindow } from '../rate-limit';
import type { PlacementGate } from '../admission';
import { earlierTopup, replayOrRoom } from './topup-opening';

// The API's side of a top-up: POST /topup and MCP create_topup, answered by the top-up workflow's
// opening (update-with-start), and the response they render.

export const IDEMPOTENCY_WARNING =
  'No idempotency key was sent: this request cannot be retried safely. Send Idempotency-Key or externalTopupId; a future version will require it.';

export interface TopupInput {
  accountId: string;
  externalTopupId: string | null;
  amount: string;
  currency: 'USDT' | 'USDC';
  source: 'rest' | 'mcp';
}

export interface TopupLimits {
  perHour: number;
  maxPending: number;
}

export function topupResponse(order: Order, reused: boolean): TopupCreateResponse {
  const pendingUrl = order.status === 'pending' ? (order.checkoutUrl ?? null) : null;
  return {
    orderId: order.id,
    externalTopupId: order.externalTopupId ?? null,
    amount: toDecimal(fromDb(order.amount)),
    status: order.status as TopupCreateResponse['status'],
    checkoutUrl: pendingUrl,
    paymentUrl: pendingUrl,
    reused,
    ...(order.idempotencyWarning ? { idempotencyWarning: IDEMPOTENCY_WARNING } : {}),
  };
}

/**
 * POST /topup, MCP create_topup and the account area: admission control, then in one statement the
 * hourly quota (replays count), the replay fast path and the unpaid limit, then the top-up workflow
 * through update-with-start. A request shed by admission control that replays an earlier top-up is
 * answered from Postgres.
 */
export async function submitTopup(
  deps: {
    em: EntityManager;
    temporal: TemporalHandle;
    limits: TopupLimits;
    config: TimingConfig;
    admission?: PlacementGate;
    /** This API process's key for sealed answers (absent: a new top-up is read back from Postgres). */
    answerKey?: AnswerKey;
  },
  input: TopupInput,
): Promise<TopupCreateResponse> {
  if (parseDecimal(input.amount) <= 0) throw new ApiError('invalid_input', 'amount must be greater than 0');
  // The top-up's checkout is opened inside its placement: its latency is the provider's, not a measure of the engine.
  const open = () => openThroughWorkflow(deps, input);
  try {
    return await (deps.admission ? deps.admission.run('topup', input.accountId, false, open) : open());
  } catch (err) {
    const shed = err instanceof ApiError && err.code === 'service_unavailable';
    const earlier = shed ? await earlierTopup(deps.em.fork(), input).catch(() => undefined) : undefined;
    if (earlier) return topupResponse(earlier, true);
    throw err;
  }
}

async function openThroughWorkflow(
  deps: {
    em: EntityManager;
    temporal: TemporalHandle;
    limits: TopupLimits;
    config: TimingConfig;
    answerKey?: AnswerKey;
  },
  input: TopupInput,
): Promise<TopupCreateResponse> {
  // The hourly quota, a replay and the unpaid limit: one statement.
  const window = rateWindow(3600);
  const checks = await topupChecks(deps.em, {
    bucket: `topup:${input.accountId}`,
    windowStart: window.start,
    accountId: input.accountId,
    externalTopupId: input.externalTopupId,
  });
  await pruneSometimes(deps.em);
  const quota = rateLimitResult(checks.hits, deps.limits.perHour, window);
  if (!quota.allowed) {
    rateLimited.inc({ limit: 'topups' });
    throw new ApiError('rate_limited', `At most ${deps.limits.perHour} top-up requests per hour`, undefined, {
      'Retry-After': String(quota.retryAfter),
    });
  }
  const existing = checks.existing ? deps.em.map(OrderSchema, checks.existing) : undefined;
  const earlier = replayOrRoom({ existing, pending: checks.pending }, input, deps.limits.maxPending);
  if (earlier) return topupResponse(earlier, true);

  const orderId = newId('ord');
  const key = input.externalTopupId ?? orderId;
  // One id for this request, kept across retries (see order-submission.ts).
  const placementId = randomUUID();
  const request: OpenTopupRequest = {
    orderId,
    externalTopupId: input.externalTopupId,
    amount: input.amount,
    currency: input.currency,
    source: input.source,
    placementId,
    ...(deps.answerKey ? { sealTo: deps.answerKey.publicKey } : {}),
  };
  // Bounded like an order's placement: no worker polling is a retryable 503, not a hang.
  const opening = await topupStarter(deps.temporal, deps.config, { accountId: input.accountId, key }).updateWithStart(
    openTopupUpdate,
    { args: [request], updateId: placementId, attempts: 3, withDeadline: true },
  );
  if (opening.outcome === 'rejected')
    throw new ApiError(opening.rejection.code, opening.rejection.message, opening.rejection.details);
  if (!opening.reused) topupsCreated.inc({ currency: input.currency });
  const shown = opening.reused ? undefined : newTopupResponse(deps.answerKey, input, placementId, opening);
  return (
    shown ?? topupResponse(await deps.em.fork().findOneOrFail(OrderSchema, { id: opening.orderId }), opening.reused)
  );
}

/** The create response of a top-up this request opened, from the opening's answer, if its seal opens. */
function newTopupResponse(
  answerKey: AnswerKey | undefined,
  input: TopupInput,
  placementId: string,
  opening: Extract<TopupOpening, { outcome: 'opened' }>,
): TopupCreateResponse | undefined {
  const opened = opening.shown && openSecrets(answerKey, opening.shown.sealed, placementId);
  if (!opening.shown || !opened) return undefined;
  const pendingUrl = opening.status === 'pending' ? opened.checkoutUrl : null;
  return {
    orderId: opening.orderId,
    externalTopupId: input.externalTopupId,
    amount: opening.shown.amount,
    status: opening.status as TopupCreateResponse['status'],
    checkoutUrl: pendingUrl,
    paymentUrl: pendingUrl,
    reused: false,
    ...(opening.shown.idempotencyWarning ? { idempotencyWarning: IDEMPOTENCY_WARNING } : {}),
  };
}
