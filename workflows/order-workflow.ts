import {
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderActivities } from '../activities/orders-activities';
import type { PaymentWorkflowState } from '../src/contracts/payments-contract';
import { placementOptions, untilPostgresAnswers } from './activity-options';
import { awaitPayment, PaymentLifecycle, runPaymentLifecycle } from './payment';
import { awaitInFlightPatch } from './placement';
import { handedOffStatusPatch, handOffToProcurement } from './procurement-handoff';
import {
  AccountIdKey,
  ExternalOrderIdKey,
  FulfillmentStatusKey,
  OrderStatusKey,
} from '../src/contracts/search-attributes';
import {
  orderStateQuery,
  placeOrderUpdate,
  type OrderWorkflowInput,
  type OrderWorkflowState,
  type Placement,
  type PlaceOrderRequest,
} from '../src/contracts/orders-contract';

// The placement the caller waits for runs as a local activity in the update handler, so the
// update completes in the first workflow task ("early return"); an intent order's checkout call
// (bounded by PAYMENT_PROVIDER_TIMEOUT_MS) happens inside it. Only unexpected errors retry.
const { placeOrder } = proxyLocalActivities<OrderActivities>(placementOptions);
/** Runs that follow a payment notice that arrived while they read the order's status at the end (see noticeWhileFinishing). */
const noticeWhileFinishingPatch = 'payment-notice-while-finishing';
// Postgres reads (idempotent): retried until the database answers, so an outage never fails the order.
const { orderStatus, findPlacedOrder } = proxyActivities<OrderActivities>(untilPostgresAnswers);

/**
 * One order, keyed by `order:<accountId>:<externalOrderId>`. Placement arrives as an update
 * (update-with-start), so concurrent retries of one externalOrderId meet here and are placed one
 * at a time; the placement activity itself is idempotent on the database's unique key. An intent
 * order then waits for its payment (callback signal or status sync), expires, and is still
 * delivered on a late payment; a callback for a closed run starts a new run with the signal.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowState> {
  const order = new Order(input);
  await runPaymentLifecycle(order);
  return order.state;
}

/** The order's state, and its message handlers: placements one at a time, payment callbacks queued. */
class Order extends PaymentLifecycle {
  readonly state: OrderWorkflowState = {
    orderId: null,
    status: 'new',
    fulfillmentStatus: null,
    placementAttempts: 0,
    lastError: null,
  };
  private readonly payment: PaymentWorkflowState = { orderId: null, status: 'new', syncs: 0, lastSyncError: null };
  /** This run was started under `awaitInFlightPatch` (see register and awaitAnswer). */
  private inFlightPatched = false;

  constructor(private readonly input: OrderWorkflowInput) {
    super();
  }

  protected subjectId(): string | null {
    return this.state.orderId;
  }

  protected tries(): number {
    return this.state.placementAttempts;
  }

  protected countTry(): void {
    this.state.placementAttempts++;
  }

  register(): void {
    // Runs under the patch were started with AccountId, ExternalOrderId and OrderStatus "new"
    // (orderStarter), so their first task upserts only what changed. Older runs upserted them here.
    this.inFlightPatched = startedUnderInFlightPatch();
    if (!this.inFlightPatched)
      upsertSearchAttributes([
        { key: AccountIdKey, value: this.input.accountId },
        { key: ExternalOrderIdKey, value: this.input.externalOrderId },
        { key: OrderStatusKey, value: this.state.status },
      ]);
    setHandler(orderStateQuery, () => ({ ...this.state, payment: this.payment }));
    this.queueNotices(this.state);
    setHandler(placeOrderUpdate, (request) => this.place(request));
  }

  /** The update: one placement at a time, answered with the placement or its rejection. */
  place(request: PlaceOrderRequest): Promise<Placement> {
    return this.exclusive(
      async () => {
        const res = await placeOrder({ ...this.input, ...request });
        if (res.outcome === 'rejected') {
          this.state.lastError = res.rejection.code;
          return res;
        }
        this.state.orderId = res.orderId;
        this.track(res.status, res.fulfillmentStatus);
        return res;
      },
      (err) => (this.state.lastError = err instanceof Error ? err.message : String(err)),
    );
  }

  /** Until a placement answered (or, with recovery on, Postgres showed the order placed). */
  awaitAnswer(): Promise<void> {
    return this.awaitPlaced({
      recoverAfterSeconds: this.input.timing?.placementRecoverySeconds,
      inFlightPatched: this.inFlightPatched,
      recover: async () => {
        const found = await findPlacedOrder({
          accountId: this.input.accountId,
          externalOrderId: this.input.externalOrderId,
        });
        if (found) {
          this.state.orderId = found.orderId;
          this.track(found.status, found.fulfillmentStatus);
        }
      },
    });
  }

  /** Its payment, then its hand-off. */
  protected async followSubject(): Promise<void> {
    await this.followPayment();
    await this.handOff();
  }

  /** An intent order's payment window, expiry and late payment; then the order as Postgres has it. */
  private async followPayment(): Promise<void> {
    const { orderId } = this.state;
    if (!orderId) {
      this.track('rejected', null);
    } else if (this.state.status === 'pending' || this.state.status === 'expired' || this.notices.queue.length > 0) {
      do {
        if (this.input.timing) await awaitPayment(orderId, this.input.timing, this.notices, this.payment);
        const after = await orderStatus(orderId);
        this.track(after.status, after.fulfillmentStatus);
      } while (this.noticeWhileFinishing());
    }
  }

  /**
   * A payment callback that arrived while the order's status was being read after its payment
   * loop ended: the loop runs again for it, as a late payment (which settles only if Postgres
   * shows the payment). Otherwise the run would end with the notice unread and the payment
   * unsettled, and the reconciler looks only at pending orders.
   */
  private noticeWhileFinishing(): boolean {
    const open = this.state.status === 'pending' || this.state.status === 'expired';
    return !!this.input.timing && open && this.notices.queue.length > 0 && patched(noticeWhileFinishingPatch);
  }

  /** A paid direct-code order (balance, or intent once settled) is procured by its own workflow. */
  private async handOff(): Promise<void> {
    const { orderId, status, fulfillmentStatus } = this.state;
    if (orderId && status === 'paid' && fulfillmentStatus) {
      await handOffToProcurement({
        orderId,
        accountId: this.input.accountId,
        externalOrderId: this.input.externalOrderId,
      });
    }
  }

  private track(status: string, fulfillmentStatus: string | null): void {
    this.state.status = status;
    this.state.fulfillmentStatus = fulfillmentStatus;
    // A paid direct-code order is procurement's (handOff), whose workflow alone carries
    // FulfillmentStatus; a replayed placement or a late notice re-running this workflow must not
    // list the order a second time. Runs before the patch put it here and cleared it at hand-off.
    const shown = status === 'paid' && patched(handedOffStatusPatch) ? null : fulfillmentStatus;
    upsertSearchAttributes([
      { key: OrderStatusKey, value: status },
      ...(shown ? [{ key: FulfillmentStatusKey, value: shown }] : []),
    ]);
  }
}

/**
 * Whether this run takes `awaitInFlightPatch`'s path. Every run orderStarter has started since
 * that patch carries OrderStatus from its start, so its start event already says so: such a run
 * records no marker (a marker, its TemporalChangeVersion upsert and their two events less in every
 * order's first task). Histories in which the marker was recorded still replay, because a replay
 * asks for it; asked during a replay, a patch absent from the history records nothing.
 * A run started without the attribute decides by the marker, as before.
 */
function startedUnderInFlightPatch(): boolean {
  const info = workflowInfo();
  if (info.typedSearchAttributes.get(OrderStatusKey) === undefined) return patched(awaitInFlightPatch);
  if (info.unsafe.isReplaying) patched(awaitInFlightPatch);
  return true;
}
