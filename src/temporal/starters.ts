// How each lifecycle's workflow is started from Node (the API, the dispatcher, the CLI), in one
// place: the workflow type, its id, the id reuse and conflict policies, the search attributes and
// the durations from config (./timing) it runs by. Each starter is typed by the workflow's
// signature (./workflow-types, checked against the workflows themselves), so Node code never
// imports workflow code and a changed workflow input fails to compile here instead of at run time.
// Call sites name no workflow type.
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  type WorkflowHandle,
  type WorkflowHandleWithSignaledRunId,
  type WorkflowSignalWithStartOptions,
  type WorkflowStartOptions,
} from '@temporalio/client';
import {
  ApplicationFailure,
  type SearchAttributePair,
  type SignalDefinition,
  type UpdateDefinition,
  type WithWorkflowArgs,
  type Workflow,
  type WorkflowIdConflictPolicy,
  type WorkflowIdReusePolicy,
} from '@temporalio/common';
import type { Config } from '../config';
import type { ApiError } from '../domain/errors';
import type { TemporalHandle } from './client';
import { apiErrorFromTemporal, isTemporalUnavailable } from './temporal-errors';
import { orderWorkflowId } from '../contracts/orders-contract';
import { procurementWorkflowId } from '../contracts/procurement-contract';
import { redemptionWorkflowId, type AttemptRef } from '../contracts/redemptions-contract';
import { AccountIdKey, ExternalOrderIdKey, OrderStatusKey } from '../contracts/search-attributes';
import { deliveryTiming, evmCheckoutTiming, paymentTiming, redemptionTiming, type TimingConfig } from './timing';
import { chainScanWorkflowId, evmCheckoutWorkflowId } from '../contracts/evm-checkouts-contract';
import { topupWorkflowId } from '../contracts/topups-contract';
import { deliveryWorkflowId } from '../contracts/webhooks-contract';
import type { Workflows } from '../contracts/workflow-types';
import { exportWorkflowId } from '../contracts/exports-contract';
import { batchWorkflowId } from '../contracts/batches-contract';

/** Everything a start says about the run, bar the task queue (the connection's). */
interface StartPlan<W extends Workflow> {
  workflowId: string;
  args: Parameters<W>;
  workflowIdConflictPolicy: WorkflowIdConflictPolicy;
  workflowIdReusePolicy: WorkflowIdReusePolicy;
  typedSearchAttributes?: SearchAttributePair[];
}

type StartOptions<W extends Workflow> = WorkflowStartOptions<W> & {
  workflowIdConflictPolicy: WorkflowIdConflictPolicy;
};

/** One lifecycle's start, ready to be sent as a plain start, a signal-with-start or an update-with-start. */
export class WorkflowStarter<W extends Workflow> {
  constructor(
    private readonly temporal: TemporalHandle,
    private readonly workflowType: string,
    private readonly plan: StartPlan<W>,
  ) {}

  /** The id this start uses, for a describe of the lifecycle's workflow (the reconciler's). */
  get workflowId(): string {
    return this.plan.workflowId;
  }

  private options(): StartOptions<W> {
    // WorkflowStartOptions<W> is conditional on W's parameters, which TypeScript cannot resolve for
    // a generic W; StartPlan<W> has already checked the args against the workflow's signature.
    return { ...this.plan, taskQueue: this.temporal.taskQueue } as unknown as StartOptions<W>;
  }

  start(): Promise<WorkflowHandle<W>> {
    return this.temporal.client.workflow.start<W>(this.workflowType, this.options());
  }

  signalWithStart<A extends unknown[]>(
    signal: SignalDefinition<A>,
    signalArgs: A,
  ): Promise<WorkflowHandleWithSignaledRunId<W>> {
    const options = { ...this.options(), signal, signalArgs } as unknown as WithWorkflowArgs<
      W,
      WorkflowSignalWithStartOptions<A>
    >;
    return this.temporal.client.workflow.signalWithStart<W, A>(this.workflowType, options);
  }

  /** The start half of an update-with-start; an operation is good for one call, so each try takes a new one. */
  withStart(): WithStartWorkflowOperation<W> {
    return new WithStartWorkflowOperation<W>(this.workflowType, this.options());
  }

  /**
   * Update-with-start, with Temporal's answers turned into the API's: a business rejection thrown
   * by the workflow (a spec error code as the failure type) is that ApiError, and a Temporal server
   * out of reach is left for the edge to answer as a retryable 503 (see isTemporalUnavailable).
   */
  async updateWithStart<Ret, Args extends unknown[]>(
    update: UpdateDefinition<Ret, Args>,
    opts: UpdateWithStartOptions<Args>,
  ): Promise<Ret> {
    const { client } = this.temporal;
    for (let attempt = 1; ; attempt++) {
      const startWorkflowOperation = this.withStart();
      const send = () =>
        client.workflow.executeUpdateWithStart(update, {
          args: opts.args,
          updateId: opts.updateId,
          startWorkflowOperation,
        });
      try {
        return await (opts.withDeadline
          ? client.withDeadline(Date.now() + this.temporal.placementDeadlineMs, send)
          : send());
      } catch (err) {
        const apiError = apiErrorFromTemporal(err);
        if (apiError) throw apiError;
        if (isTemporalUnavailable(err)) throw err;
        if ((err instanceof WorkflowUpdateFailedError && !unprocessed(err)) || attempt >= opts.attempts)
          throw (await opts.onGiveUp?.(err)) ?? err;
      }
    }
  }
}

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

/** The workflow type is one of workflows/index.ts's exports, and the plan's args are its input. */
function starter<N extends keyof Workflows>(
  temporal: TemporalHandle,
  workflowType: N,
  plan: StartPlan<Workflows[N]>,
): WorkflowStarter<Workflows[N]> {
  return new WorkflowStarter(temporal, workflowType, plan);
}

/**
 * Orders and top-ups: concurrent requests and callbacks meet in the running workflow, a closed one
 * may be followed by a new run; ops find them by account and the reseller's own id.
 */
function paymentLifecycle(accountId: string, externalId: string, more: SearchAttributePair[] = []) {
  return {
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
    typedSearchAttributes: [
      { key: AccountIdKey, value: accountId },
      { key: ExternalOrderIdKey, value: externalId },
      ...more,
    ],
  };
}

/**
 * `order:<accountId>:<externalOrderId>`. Concurrent placements and callbacks meet in the running
 * workflow; after it closes a new run may follow (a late payment, a placement retried after the
 * run ended), and it finds the order in Postgres.
 */
export function orderStarter(
  temporal: TemporalHandle,
  config: TimingConfig,
  order: { accountId: string; externalOrderId: string },
) {
  return starter(temporal, 'orderWorkflow', {
    workflowId: orderWorkflowId(order.accountId, order.externalOrderId),
    args: [{ accountId: order.accountId, externalOrderId: order.externalOrderId, timing: paymentTiming(config) }],
    ...paymentLifecycle(order.accountId, order.externalOrderId, [{ key: OrderStatusKey, value: 'new' }]),
  });
}

/** `topup:<accountId>:<externalTopupId or orderId>`, with the same rules as an order. */
export function topupStarter(
  temporal: TemporalHandle,
  config: TimingConfig,
  topup: { accountId: string; key: string },
) {
  return starter(temporal, 'topupWorkflow', {
    workflowId: topupWorkflowId(topup.accountId, topup.key),
    args: [{ accountId: topup.accountId, key: topup.key, timing: paymentTiming(config) }],
    ...paymentLifecycle(topup.accountId, topup.key),
  });
}

/**
 * `procure:<orderId>`, as support reaches it (the order workflow hands a paid order over as its
 * child, with the same reuse policy): a run that completed stays done, one that failed or was
 * terminated may be started again and picks up from Postgres. Its durations are the worker's,
 * read by its first activity, since the order workflow that starts it has none to pass on.
 */
export function procurementStarter(
  temporal: TemporalHandle,
  order: { orderId: string; accountId: string; externalOrderId: string | null },
) {
  return starter(temporal, 'procurementWorkflow', {
    workflowId: procurementWorkflowId(order.orderId),
    args: [{ orderId: order.orderId, accountId: order.accountId, externalOrderId: order.externalOrderId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    typedSearchAttributes: [
      { key: AccountIdKey, value: order.accountId },
      ...(order.externalOrderId ? [{ key: ExternalOrderIdKey, value: order.externalOrderId }] : []),
    ],
  });
}

/**
 * `redemption:<redemptionId>:<attempt>`. An attempt number is committed once; a run still holding
 * its id can only be left over from a submission whose transaction rolled back, so it is replaced.
 */
export function redemptionStarter(temporal: TemporalHandle, config: TimingConfig, attempt: AttemptRef) {
  return starter(temporal, 'redemptionWorkflow', {
    workflowId: redemptionWorkflowId(attempt.redemptionId, attempt.attempt),
    args: [{ redemptionId: attempt.redemptionId, attempt: attempt.attempt, ...redemptionTiming(config) }],
    workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

/**
 * `delivery:<deliveryId>`, harmless to repeat: a running delivery is kept, and a closed one gets
 * a new run, which is what a delivery row still pending needs.
 */
export function deliveryStarter(
  temporal: TemporalHandle,
  config: TimingConfig,
  delivery: { id: string; accountId: string },
) {
  return starter(temporal, 'webhookDeliveryWorkflow', {
    workflowId: deliveryWorkflowId(delivery.id),
    args: [{ deliveryId: delivery.id, ...deliveryTiming(config) }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [{ key: AccountIdKey, value: delivery.accountId }],
  });
}

/**
 * `checkout-watch:<orderId>:<depositIndex>`, started with the checkout (PAYMENT_PROVIDER=evm). A watch that
 * completed closed its checkout and stays done; one that failed or was terminated may be started
 * again and takes up from Postgres. A watch started again is given its checkout's `expiresAt`
 * (ms since the epoch): its window, late watch and address watch are counted from it, not from
 * the restart.
 */
export function evmCheckoutStarter(
  temporal: TemporalHandle,
  config: TimingConfig,
  checkout: { orderId: string; depositIndex: number; expiresAt?: number },
) {
  return starter(temporal, 'evmCheckoutWorkflow', {
    workflowId: evmCheckoutWorkflowId(checkout.orderId, checkout.depositIndex),
    args: [
      {
        depositIndex: checkout.depositIndex,
        timing: evmCheckoutTiming(config),
        ...(checkout.expiresAt === undefined ? {} : { expiresAt: checkout.expiresAt }),
      },
    ],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
  });
}

/**
 * `chain-scan:<taskQueue>:<chainId>`, started by every worker process with EVM chains: the running
 * scanner is kept, and one that ended (its chain was dropped from the config, then brought back;
 * or terminated by an operator) is started again.
 */
export function chainScanStarter(temporal: TemporalHandle, chainId: number) {
  return starter(temporal, 'chainScanWorkflow', {
    workflowId: chainScanWorkflowId(temporal.taskQueue, chainId),
    args: [{ chainId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

/**
 * `export:<exportId>`, started when the export is requested, again by a resubmission or the
 * reconciler: a running one is kept, one that completed (its file written and expired) stays
 * done, one that failed or was terminated takes up from the pages Postgres holds.
 */
export function exportStarter(temporal: TemporalHandle, e: { exportId: string; accountId: string }) {
  return starter(temporal, 'exportWorkflow', {
    workflowId: exportWorkflowId(e.exportId),
    args: [{ exportId: e.exportId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    typedSearchAttributes: [{ key: AccountIdKey, value: e.accountId }],
  });
}

/**
 * `batch:<batchId>`, with the same rules as an export: a completed batch stays done, and a run
 * started again places only the lines Postgres holds no outcome for.
 */
export function batchStarter(
  temporal: TemporalHandle,
  config: Pick<Config, 'BATCH_CHUNK_LINES'>,
  b: { batchId: string; accountId: string },
) {
  return starter(temporal, 'batchWorkflow', {
    workflowId: batchWorkflowId(b.batchId),
    args: [{ batchId: b.batchId, chunkLines: config.BATCH_CHUNK_LINES }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    typedSearchAttributes: [{ key: AccountIdKey, value: b.accountId }],
  });
}

/** Starts a lifecycle's workflow unless it runs or completed already (its reuse policy refuses a new run). */
export async function ensureStarted<W extends Workflow>(s: WorkflowStarter<W>): Promise<void> {
  try {
    await s.start();
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
