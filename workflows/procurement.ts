import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { ProcurementActivities } from '../activities/procurement';
import { AccountIdKey, ExternalOrderIdKey, FulfillmentStatusKey, OrderStatusKey } from '../src/temporal/search-attributes';
import {
  deliverManuallyUpdate,
  procurementStateQuery,
  refundUpdate,
  resumeUpdate,
  type DeliverRequest,
  type OrderFacts,
  type ProcurementPhase,
  type ProcurementState,
  type ProcurementTiming,
  type ProcurementWorkflowInput,
  type RoundResult,
  type SupportActionName,
  type SupportRequest,
} from '../src/temporal/procurement';

// Postgres steps retry until the database is back; support actions fail fast on business errors.
const db = proxyActivities<ProcurementActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: ['invalid_input', 'not_found'] },
});
// A supplier round heartbeats; a lost worker is noticed in seconds and the round retried with its key.
const supplier = proxyActivities<ProcurementActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

const MAX_ACTIONS_KEPT = 20;

function phaseOf(f: OrderFacts): ProcurementPhase {
  if (f.status === 'delivered') return 'delivered';
  if (f.status === 'refunded') return 'refunded';
  if (f.status === 'paid' && f.fulfillmentStatus === 'processing') return 'procuring';
  if (f.status === 'paid' && f.fulfillmentStatus === 'needs_attention') return 'needs_attention';
  return 'closed';
}

const messageOf = (err: unknown) => (err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err));

/** Business errors of a support activity fail the update (the support agent's request), not the workflow. */
function asUpdateFailure(err: unknown): ApplicationFailure {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) return err.cause;
  if (err instanceof ApplicationFailure) return err;
  return ApplicationFailure.nonRetryable(messageOf(err), 'internal_error');
}

/**
 * Procures one paid direct-code order, keyed by `procure:<orderId>` (spec 3.2). Rounds ask the
 * supplier for the remaining units, with backoff; codes are stored as they arrive and withheld
 * until the whole quantity is in, then the order is delivered. After the configured rounds or
 * time it enters needs_attention (`order.delivery_attention` once) and waits for support:
 * `resume`, `deliverManually` or `refund`, as updates that answer with the new state. The
 * `state` query and the search attributes show ops where every order stands.
 */
export async function procurementWorkflow(input: ProcurementWorkflowInput): Promise<ProcurementState> {
  const { orderId } = input;
  const state: ProcurementState = {
    orderId,
    phase: 'starting',
    orderStatus: null,
    fulfillmentStatus: null,
    qty: 0,
    fulfilledQuantity: 0,
    remaining: 0,
    lastRoundAt: null,
    nextRoundAt: null,
    attentionSince: null,
    timing: null,
    rounds: 0,
    roundsSinceResume: 0,
    attemptStartedAt: null,
    emptyStreak: 0,
    lastSupplierError: null,
    supportActions: [],
    ...input.progress,
  };
  /** One support action at a time (a flag checked by `condition` let concurrent ones through together). */
  const support = new Mutex();
  /** Set while markNeedsAttention runs: Postgres may already show the order waiting for support. */
  let enteringAttention = false;

  upsertSearchAttributes([
    { key: AccountIdKey, value: input.accountId },
    ...(input.externalOrderId ? [{ key: ExternalOrderIdKey, value: input.externalOrderId }] : []),
  ]);

  const apply = (f: OrderFacts) => {
    const changed = f.status !== state.orderStatus || f.fulfillmentStatus !== state.fulfillmentStatus;
    state.orderStatus = f.status;
    state.fulfillmentStatus = f.fulfillmentStatus;
    state.qty = f.qty;
    state.fulfilledQuantity = f.fulfilledQuantity;
    state.remaining = Math.max(0, f.qty - f.fulfilledQuantity);
    state.phase = phaseOf(f);
    if (state.phase !== 'procuring') state.nextRoundAt = null;
    state.attentionSince = state.phase === 'needs_attention' ? (state.attentionSince ?? Date.now()) : null;
    if (changed) {
      upsertSearchAttributes([
        { key: OrderStatusKey, value: f.status },
        { key: FulfillmentStatusKey, value: f.fulfillmentStatus },
      ]);
    }
  };

  setHandler(procurementStateQuery, () => state);

  const notWaiting = () =>
    ApplicationFailure.create({
      message: `Order ${orderId} is not waiting for support (${state.phase})`,
      type: 'invalid_input',
      nonRetryable: true,
      details: [{ phase: state.phase, status: state.orderStatus, fulfillmentStatus: state.fulfillmentStatus }],
    });

  const validate = (req: SupportRequest) => {
    if (!req?.actor?.trim() || !req?.reason?.trim()) throw ApplicationFailure.nonRetryable('actor and reason are required', 'invalid_input');
    // Before the first step the phase is not known yet (support may have started this run), and
    // while the order is being moved to needs_attention Postgres already shows it waiting.
    if (state.phase !== 'starting' && state.phase !== 'needs_attention' && !enteringAttention) throw notWaiting();
  };

  /** One support action at a time, only while the order waits for support. */
  const supportAction =
    <R extends SupportRequest>(action: SupportActionName, run: (req: R) => Promise<OrderFacts>) =>
    (req: R): Promise<ProcurementState> => support.runExclusive(async () => {
      await condition(() => state.phase !== 'starting' && !enteringAttention);
      if (state.phase !== 'needs_attention') throw notWaiting();
      try {
        const facts = await run(req);
        state.supportActions = [...state.supportActions, { action, actor: req.actor, at: Date.now() }].slice(-MAX_ACTIONS_KEPT);
        if (action === 'resume') {
          state.roundsSinceResume = 0;
          state.attemptStartedAt = null;
          state.emptyStreak = 0;
        }
        apply(facts);
        return { ...state };
      } catch (err) {
        throw asUpdateFailure(err);
      }
    });

  setHandler(resumeUpdate, supportAction('resume', (req) => db.resumeProcurement({ orderId, ...req })), { validator: validate });
  setHandler(deliverManuallyUpdate, supportAction('deliver', (req: DeliverRequest) => db.deliverManually({ orderId, ...req })), {
    validator: (req) => {
      validate(req);
      if (!req.batchId) throw ApplicationFailure.nonRetryable('a staged batch of codes is required', 'invalid_input');
    },
  });
  setHandler(refundUpdate, supportAction('refund', (req) => db.refundUndelivered({ orderId, ...req })), { validator: validate });

  const begun = await db.beginProcurement(orderId);
  const timing: ProcurementTiming = begun.timing;
  state.timing = timing;
  apply(begun.facts);

  const enterAttention = async () => {
    enteringAttention = true;
    try {
      apply(await db.markNeedsAttention(orderId));
    } finally {
      enteringAttention = false;
    }
  };

  /** Backoff before the next round: the base after progress, doubling while rounds obtain nothing, capped. */
  const backoffMs = () => Math.min(timing.retryCapSeconds, timing.retryBaseSeconds * 2 ** Math.max(0, state.emptyStreak - 1)) * 1000;

  /** Rounds of one attempt, until delivered, refused, or past the attempt's bounds. */
  const procure = async () => {
    state.attemptStartedAt ??= Date.now();
    const deadline = state.attemptStartedAt + timing.deadlineSeconds * 1000;
    while (state.phase === 'procuring') {
      if (state.roundsSinceResume >= timing.maxRounds || Date.now() >= deadline) return enterAttention();
      state.rounds++;
      state.roundsSinceResume++;
      state.lastRoundAt = Date.now();
      state.nextRoundAt = null;
      // Stable across retries of this round, distinct across rounds and across later runs.
      const idempotencyKey = `${orderId}:${workflowInfo().firstExecutionRunId}:${state.rounds}`;
      let round: RoundResult | undefined;
      try {
        round = await supplier.procureRound({ orderId, idempotencyKey });
      } catch (err) {
        state.lastSupplierError = messageOf(err); // the round itself kept failing: count it as empty
      }
      if (round) {
        if (round.error) state.lastSupplierError = round.error;
        apply(round);
        if (state.phase !== 'procuring') return;
        if (round.outcome === 'permanent') return enterAttention();
      }
      state.emptyStreak = round && round.obtained > 0 ? 0 : state.emptyStreak + 1;
      if (state.roundsSinceResume >= timing.maxRounds) return enterAttention();
      const wait = Math.min(backoffMs(), deadline - Date.now());
      if (wait > 0) {
        state.nextRoundAt = Date.now() + wait;
        await sleep(wait);
      }
    }
  };

  const timeToContinueAsNew = () => workflowInfo().continueAsNewSuggested && !support.isLocked() && allHandlersFinished();
  for (;;) {
    if (timeToContinueAsNew()) {
      const { rounds, roundsSinceResume, attemptStartedAt, emptyStreak, lastSupplierError, supportActions } = state;
      await continueAsNew<typeof procurementWorkflow>({
        ...input,
        progress: { rounds, roundsSinceResume, attemptStartedAt, emptyStreak, lastSupplierError, supportActions },
      });
    }
    if (state.phase === 'procuring') await procure();
    else if (state.phase === 'needs_attention') {
      // Support acts through the update handlers; a long wait hands over to a fresh run.
      await condition(() => state.phase !== 'needs_attention' || timeToContinueAsNew());
    } else break;
  }
  await condition(allHandlersFinished);
  return state;
}
