import { proxyActivities, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { PaymentActivities } from '../activities/payments-activities';
import type { PaymentWorkflowState } from '../src/contracts/payments-contract';
import { OrderStatusKey } from '../src/contracts/search-attributes';
import {
  openTopupUpdate,
  topupStateQuery,
  type OpenTopupRequest,
  type TopupOpening,
  type TopupWorkflowInput,
} from '../src/contracts/topups-contract';
import { placementOptions, untilPostgresAnswers } from './activity-options';
import { awaitPayment, PaymentLifecycle, runPaymentLifecycle } from './payment';

// Opening the checkout answers the caller: a local activity in the update handler (early
// return). Rejections come back as values; only unexpected errors retry.
const { openTopup } = proxyLocalActivities<PaymentActivities>(placementOptions);
const { findOpenedTopup } = proxyActivities<PaymentActivities>(untilPostgresAnswers);

/**
 * One top-up, keyed `topup:<accountId>:<externalTopupId or orderId>`: opens the hosted checkout
 * (update-with-start answers the caller), then waits for the payment, expires it, and still
 * credits a late payment. A callback for a closed run starts a new run with the signal.
 */
export async function topupWorkflow(input: TopupWorkflowInput): Promise<PaymentWorkflowState> {
  const topup = new Topup(input);
  await runPaymentLifecycle(topup);
  return topup.state;
}

/** The top-up's state, and its message handlers: openings one at a time, payment callbacks queued. */
class Topup extends PaymentLifecycle {
  readonly state: PaymentWorkflowState = { orderId: null, status: 'new', syncs: 0, lastSyncError: null };
  private attempts = 0;

  constructor(private readonly input: TopupWorkflowInput) {
    super();
  }

  protected subjectId(): string | null {
    return this.state.orderId;
  }

  protected tries(): number {
    return this.attempts;
  }

  protected countTry(): void {
    this.attempts++;
  }

  register(): void {
    setHandler(topupStateQuery, () => this.state);
    this.queueNotices(this.state);
    setHandler(openTopupUpdate, (req) => this.open(req));
  }

  /** The update: one opening at a time, answered with the top-up or its rejection. */
  open(req: OpenTopupRequest): Promise<TopupOpening> {
    return this.exclusive(async () => {
      const res = await openTopup({ ...req, accountId: this.input.accountId });
      if (res.outcome === 'opened') {
        this.state.orderId = res.orderId;
        this.state.status = res.status;
      }
      return res;
    });
  }

  /**
   * Until an opening answered. As in the order workflow, an opening whose update was lost in a
   * Temporal restart after it committed is found in Postgres, so its payment window, expiry and
   * credit still happen here.
   */
  awaitAnswer(): Promise<void> {
    return this.awaitPlaced({
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

  /** The payment window, expiry and late payment of an opened top-up. */
  protected async followSubject(): Promise<void> {
    if (!this.state.orderId) return;
    upsertSearchAttributes([{ key: OrderStatusKey, value: 'pending' }]);
    const outcome = await awaitPayment(this.state.orderId, this.input.timing, this.notices, this.state);
    this.state.status = outcome === 'expired' ? 'expired' : 'delivered';
    upsertSearchAttributes([{ key: OrderStatusKey, value: this.state.status }]);
  }
}
