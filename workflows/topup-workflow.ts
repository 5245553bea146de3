import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { PaymentActivities } from '../activities/payments-activities';
import { paymentNotifiedSignal, type PaymentWorkflowState } from '../src/contracts/payments';
import { OrderStatusKey } from '../src/contracts/search-attributes';
import { openTopupUpdate, topupStateQuery, type OpenTopupRequest, type TopupOpening, type TopupWorkflowInput } from '../src/contracts/topups';
import { placementOptions, postgresReadOptions } from './activity-options';
import { awaitPayment, queueNotice, type Notices } from './payment';
import { awaitPlacement, latePlacementPatch, placeExclusively } from './placement';

// Opening the checkout answers the caller: a local activity in the update handler (early
// return). Rejections come back as values; only unexpected errors retry.
const { openTopup } = proxyLocalActivities<PaymentActivities>(placementOptions);
const { findOpenedTopup } = proxyActivities<PaymentActivities>(postgresReadOptions);

/**
 * One top-up, keyed `topup:<accountId>:<externalTopupId or orderId>`: opens the hosted checkout
 * (update-with-start answers the caller), then waits for the payment, expires it, and still
 * credits a late payment. A callback for a closed run starts a new run with the signal.
 */
export async function topupWorkflow(input: TopupWorkflowInput): Promise<PaymentWorkflowState> {
  const topup = new Topup(input);
  topup.register();
  await topup.awaitOpening();
  await topup.follow();
  if (topup.openedLate() && patched(latePlacementPatch)) await topup.follow();
  return topup.state;
}

/** The top-up's state, and its message handlers: openings one at a time, payment callbacks queued. */
class Topup {
  readonly state: PaymentWorkflowState = { orderId: null, status: 'new', syncs: 0, lastSyncError: null };
  private readonly notices: Notices = { queue: [] };
  /** Openings that arrive together wait their turn. */
  private readonly opening = new Mutex();
  private attempts = 0;
  /** The top-up `follow` set out with (null: the run had settled for none). */
  private followed: string | null = null;

  constructor(private readonly input: TopupWorkflowInput) {}

  register(): void {
    setHandler(topupStateQuery, () => this.state);
    setHandler(paymentNotifiedSignal, (notice) => queueNotice(this.state, this.notices, notice));
    setHandler(openTopupUpdate, (req) => this.open(req));
  }

  /** The update: one opening at a time, answered with the top-up or its rejection. */
  open(req: OpenTopupRequest): Promise<TopupOpening> {
    return placeExclusively(
      this.opening,
      async () => {
        const res = await openTopup({ ...req, accountId: this.input.accountId });
        if (res.outcome === 'opened') {
          this.state.orderId = res.orderId;
          this.state.status = res.status;
        }
        return res;
      },
      { tried: () => this.attempts++ },
    );
  }

  /**
   * Until an opening answered. As in the order workflow, an opening whose update was lost in a
   * Temporal restart after it committed is found in Postgres, so its payment window, expiry and
   * credit still happen here.
   */
  awaitOpening(): Promise<void> {
    return awaitPlacement({
      answered: () => this.state.orderId !== null || (this.attempts > 0 && !this.opening.isLocked() && allHandlersFinished()),
      inFlight: () => this.opening.isLocked(),
      recoverAfterSeconds: this.input.timing?.placementRecoverySeconds,
      recover: async () => {
        const found = await findOpenedTopup({ accountId: this.input.accountId, key: this.input.key });
        if (found) {
          this.state.orderId = found.orderId;
          this.state.status = found.status;
        }
      },
    });
  }

  /**
   * The top-up this run settled on (or none) to its end, and every handler finished. As in the
   * order workflow, an opening that arrived while the recovery asked Postgres can answer only then.
   */
  async follow(): Promise<void> {
    this.followed = this.state.orderId;
    await this.followPayment();
    await condition(allHandlersFinished);
  }

  /** An opening answered with a top-up after the run had settled for none: it is followed too. */
  openedLate(): boolean {
    return this.state.orderId !== null && this.followed === null;
  }

  /** The payment window, expiry and late payment of an opened top-up. */
  private async followPayment(): Promise<void> {
    if (!this.state.orderId) return;
    upsertSearchAttributes([{ key: OrderStatusKey, value: 'pending' }]);
    const outcome = await awaitPayment(this.state.orderId, this.input.timing, this.notices, this.state);
    this.state.status = outcome === 'expired' ? 'expired' : 'delivered';
    upsertSearchAttributes([{ key: OrderStatusKey, value: this.state.status }]);
  }
}
