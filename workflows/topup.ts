import { allHandlersFinished, condition, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
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

const { openTopup } = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
});

/**
 * One top-up, keyed `topup:<accountId>:<externalTopupId or orderId>`: opens the hosted checkout
 * (update-with-start answers the caller), then waits for the payment, expires it, and still
 * credits a late payment. A callback for a closed run starts a new run with the signal.
 */
export async function topupWorkflow(input: TopupWorkflowInput): Promise<PaymentWorkflowState> {
  const state: PaymentWorkflowState = { orderId: null, status: 'new', syncs: 0, lastSyncError: null };
  const notices: Notices = { queue: [] };
  let opening = false;
  let attempts = 0;

  setHandler(topupStateQuery, () => state);
  setHandler(paymentNotifiedSignal, (notice) => {
    state.orderId ??= notice.orderId;
    notices.queue.push(notice);
  });
  setHandler(openTopupUpdate, async (req: OpenTopupRequest) => {
    await condition(() => !opening);
    opening = true;
    try {
      const res = await openTopup({ ...req, accountId: input.accountId });
      state.orderId = res.orderId;
      state.status = res.status;
      return res;
    } catch (err) {
      throw updateFailure(err);
    } finally {
      attempts++;
      opening = false;
    }
  });

  await condition(() => state.orderId !== null || (attempts > 0 && !opening && allHandlersFinished()));
  if (state.orderId) {
    upsertSearchAttributes([{ key: OrderStatusKey, value: 'pending' }]);
    const outcome = await awaitPayment(state.orderId, input.timing, notices, state);
    state.status = outcome === 'expired' ? 'expired' : 'delivered';
    upsertSearchAttributes([{ key: OrderStatusKey, value: state.status }]);
  }
  await condition(allHandlersFinished);
  return state;
}
