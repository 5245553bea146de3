import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { ProcurementActivities } from '../activities/procurement-activities';
import {
  AccountIdKey,
  ExternalOrderIdKey,
  FulfillmentStatusKey,
  OrderStatusKey,
} from '../src/contracts/search-attributes';
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
} from '../src/contracts/procurement-contract';
import { fewTries, untilPostgresAnswersOrRefuses } from './activity-options';
import { updateFailure } from './update-failure';

// Postgres steps retry until the database is back; support actions fail fast on business errors.
const db = proxyActivities<ProcurementActivities>(untilPostgresAnswersOrRefuses('invalid_input', 'not_found'));
// A supplier round heartbeats; a lost worker is noticed in seconds and the round retried with its key.
const supplier = proxyActivities<ProcurementActivities>(
  fewTries('5 minutes', { heartbeatTimeout: '5 seconds', retry: { maximumAttempts: 10 } }),
);

const MAX_ACTIONS_KEPT = 20;

function phaseOf(f: OrderFacts): ProcurementPhase {
  if (f.status === 'delivered') return 'delivered';
  if (f.status === 'refunded') return 'refunded';
  if (f.status === 'paid' && f.fulfillmentStatus === 'processing') return 'procuring';
  if (f.status === 'paid' && f.fulfillmentStatus === 'needs_attention') return 'needs_attention';
  return 'closed';
}

const messageOf = (err: unknown) =>
  err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);

/**
 * Procures one paid direct-code order, keyed by `procure:<orderId>` (spec 3.2). Rounds ask the
 * supplier for the remaining units, with backoff; codes are stored as they arrive and withheld
 * until the whole quantity is in, then the order is delivered. After the configured rounds or
 * time it enters needs_attention (`order.delivery_attention` once) and waits for support:
 * `resume`, `deliverManually` or `refund`, as updates that answer with the new state. The
 * `state` query and the search attributes show ops where every order stands.
 */
export async function procurementWorkflow(input: ProcurementWorkflowInput): Promise<ProcurementState> {
  const procurement = new Procurement(input);
  procurement.register();
  await procurement.begin();
  return procurement.run();
}

/** The procurement's state; its support actions are the update handlers, one at a time. */
class Procurement {
  readonly state: ProcurementState;
  /**
   * Held by each support action, and while the order is being moved to needs_attention (Postgres
   * may already show it waiting then): an action sent meanwhile waits its turn instead of being
   * refused or running beside it.
   */
  private readonly support = new Mutex();
  private timing!: ProcurementTiming;

  constructor(private readonly input: ProcurementWorkflowInput) {
    this.state = {
      orderId: input.orderId,
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
  }

  register(): void {
    const { orderId } = this.input;
    upsertSearchAttributes([
      { key: AccountIdKey, value: this.input.accountId },
      ...(this.input.externalOrderId ? [{ key: ExternalOrderIdKey, value: this.input.externalOrderId }] : []),
    ]);
    setHandler(procurementStateQuery, () => this.state);
    setHandler(resumeUpdate, (req) => this.act('resume', req, () => db.resumeProcurement({ orderId, ...req })), {
      validator: (req) => this.validate(req),
    });
    setHandler(
      deliverManuallyUpdate,
      (req: DeliverRequest) => this.act('deliver', req, () => db.deliverManually({ orderId, ...req })),
      {
        validator: (req) => {
          this.validate(req);
          if (!req.batchId)
            throw ApplicationFailure.nonRetryable('a staged batch of codes is required', 'invalid_input');
        },
      },
    );
    setHandler(refundUpdate, (req) => this.act('refund', req, () => db.refundUndelivered({ orderId, ...req })), {
      validator: (req) => this.validate(req),
    });
  }

  /** The order as Postgres holds it, and the bounds this worker's config sets. */
  async begin(): Promise<void> {
    const begun = await db.beginProcurement(this.input.orderId);
    this.timing = begun.timing;
    this.state.timing = begun.timing;
    this.apply(begun.facts);
  }

  /** Rounds while procuring, waits while support is needed, until the order is closed one way or the other. */
  async run(): Promise<ProcurementState> {
    for (;;) {
      if (this.timeToContinueAsNew()) await this.continueAsNew();
      if (this.state.phase === 'procuring') await this.procure();
      else if (this.state.phase === 'needs_attention') {
        // Support acts through the update handlers; a long wait hands over to a fresh run.
        await condition(() => this.state.phase !== 'needs_attention' || this.timeToContinueAsNew());
      } else break;
    }
    await condition(allHandlersFinished);
    return this.state;
  }

  /** Rounds of one attempt, until delivered, refused, or past the attempt's bounds. */
  private async procure(): Promise<void> {
    const { state, timing } = this;
    const { orderId } = this.input;
    state.attemptStartedAt ??= Date.now();
    const deadline = state.attemptStartedAt + timing.deadlineSeconds * 1000;
    while (state.phase === 'procuring') {
      if (state.roundsSinceResume >= timing.maxRounds || Date.now() >= deadline) return this.enterAttention();
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
        if (isCancellation(err)) throw err;
        state.lastSupplierError = messageOf(err); // the round itself kept failing: count it as empty
      }
      if (round) {
        if (round.error) state.lastSupplierError = round.error;
        this.apply(round);
        if (state.phase !== 'procuring') return;
        if (round.outcome === 'permanent') return this.enterAttention();
      }
      state.emptyStreak = round && round.obtained > 0 ? 0 : state.emptyStreak + 1;
      if (state.roundsSinceResume >= timing.maxRounds) return this.enterAttention();
      const wait = Math.min(this.backoffMs(), deadline - Date.now());
      if (wait > 0) {
        state.nextRoundAt = Date.now() + wait;
        await sleep(wait);
      }
    }
  }

  /** Backoff before the next round: the base after progress, doubling while rounds obtain nothing, capped. */
  private backoffMs(): number {
    const { retryBaseSeconds, retryCapSeconds } = this.timing;
    return Math.min(retryCapSeconds, retryBaseSeconds * 2 ** Math.max(0, this.state.emptyStreak - 1)) * 1000;
  }

  /** Postgres moves the order to needs_attention (and writes order.delivery_attention once). */
  private enterAttention(): Promise<void> {
    return this.support.runExclusive(async () => this.apply(await db.markNeedsAttention(this.input.orderId)));
  }

  /** One support action: after the first step, in its turn, and only while the order waits for support. */
  private async act(
    action: SupportActionName,
    req: SupportRequest,
    run: () => Promise<OrderFacts>,
  ): Promise<ProcurementState> {
    await condition(() => this.state.phase !== 'starting');
    return this.support.runExclusive(async () => {
      if (this.state.phase !== 'needs_attention') throw this.notWaiting();
      let facts: OrderFacts;
      try {
        facts = await run();
      } catch (err) {
        if (isCancellation(err)) throw err;
        // A business error fails the update (the support agent's request), not the workflow.
        throw updateFailure(err);
      }
      this.state.supportActions = [...this.state.supportActions, { action, actor: req.actor, at: Date.now() }].slice(
        -MAX_ACTIONS_KEPT,
      );
      if (action === 'resume') {
        this.state.roundsSinceResume = 0;
        this.state.attemptStartedAt = null;
        this.state.emptyStreak = 0;
      }
      this.apply(facts);
      return { ...this.state };
    });
  }

  /**
   * Refuses a support action at once when it can never run. Before the first step the phase is
   * not known yet (support may have started this run), and while the support lock is held (the
   * order being moved to needs_attention, or another action) this one waits its turn and is
   * checked then.
   */
  private validate(req: SupportRequest): void {
    if (!req?.actor?.trim() || !req?.reason?.trim())
      throw ApplicationFailure.nonRetryable('actor and reason are required', 'invalid_input');
    const { phase } = this.state;
    if (phase !== 'starting' && phase !== 'needs_attention' && !this.support.isLocked()) throw this.notWaiting();
  }

  private notWaiting(): ApplicationFailure {
    const { phase, orderStatus: status, fulfillmentStatus } = this.state;
    return ApplicationFailure.create({
      message: `Order ${this.input.orderId} is not waiting for support (${phase})`,
      type: 'invalid_input',
      nonRetryable: true,
      details: [{ phase, status, fulfillmentStatus }],
    });
  }

  /** Takes on what Postgres says; the search attributes change only with the order's status. */
  private apply(f: OrderFacts): void {
    const { state } = this;
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
  }

  private timeToContinueAsNew(): boolean {
    return workflowInfo().continueAsNewSuggested && !this.support.isLocked() && allHandlersFinished();
  }

  /** A fresh run with the progress so far (the order's facts are read again from Postgres). */
  private async continueAsNew(): Promise<never> {
    const { rounds, roundsSinceResume, attemptStartedAt, emptyStreak, lastSupplierError, supportActions } = this.state;
    return continueAsNew<typeof procurementWorkflow>({
      ...this.input,
      progress: { rounds, roundsSinceResume, attemptStartedAt, emptyStreak, lastSupplierError, supportActions },
    });
  }
}
