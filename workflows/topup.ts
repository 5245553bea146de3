import { allHandlersFinished, condition, patched, proxyActivities, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { PaymentActivities } from '../activities/payments';
import {
  openTopupUpdate,
  paymentNotifiedSignal,
  topupStateQuery,
  type OpenTopupRequest,
  type PaymentWorkflowState,
  type TopupWorkflowInput,
} from '../src/temporal/payments';
import { OrderStatusKey } from '../src/temporal/search-attributes';
import { awaitPayment, type Notices } from './payment';
import { updateFailure } from './update-failure';

// Opening the checkout answers the caller: a local activity in the update handler (early
// return). Rejections come back as values; only unexpected errors retry.
const { openTopup } = proxyLocalActivities<PaymentActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
});
const { findOpenedTopup } = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
});

/**
 * One top-up, keyed `topup:<accountId>:<externalTopupId or orderId>`: opens the hosted checkout
 * (update-with-start answers the caller), then waits for the payment, expires it, and still
 * credits a late payment. A callback for a closed run starts a new run with the signal.
 */
export async function topupWorkflow(input: TopupWorkflowInput): Promise<PaymentWorkflowState> {
  const state: PaymentWorkflowState = { orderId: null, status: 'new', syncs: 0, lastSyncError: null };
  const notices: Notices = { queue: [] };
  const opening = new Mutex();
  let attempts = 0;

  setHandler(topupStateQuery, () => state);
  setHandler(paymentNotifiedSignal, (notice) => {
    state.orderId ??= notice.orderId;
    notices.queue.push(notice);
  });
  // One opening at a time: updates that arrive together wait their turn.
  setHandler(openTopupUpdate, (req: OpenTopupRequest) => opening.runExclusive(async () => {
    try {
      const res = await openTopup({ ...req, accountId: input.accountId });
      if (res.outcome === 'opened') {
        state.orderId = res.orderId;
        state.status = res.status;
      }
      return res;
    } catch (err) {
      throw updateFailure(err);
    } finally {
      attempts++;
    }
  }));

  const answered = () => state.orderId !== null || (attempts > 0 && !opening.isLocked() && allHandlersFinished());
  const recoverAfter = input.timing?.placementRecoverySeconds;
  if (recoverAfter && patched('placement-recovery')) {
    // As in the order workflow: an opening whose update was lost in a Temporal restart after it
    // committed is found in Postgres, so its payment window, expiry and credit still happen here.
    while (!(await condition(answered, recoverAfter * 1000))) {
      if (opening.isLocked()) continue;
      const found = await findOpenedTopup({ accountId: input.accountId, key: input.key });
      if (found) {
        state.orderId = found.orderId;
        state.status = found.status;
      }
      break;
    }
  } else {
    await condition(answered);
  }
  if (state.orderId) {
    upsertSearchAttributes([{ key: OrderStatusKey, value: 'pending' }]);
    const outcome = await awaitPayment(state.orderId, input.timing, notices, state);
    state.status = outcome === 'expired' ? 'expired' : 'delivered';
    upsertSearchAttributes([{ key: OrderStatusKey, value: state.status }]);
  }
  await condition(allHandlersFinished);
  return state;
}
