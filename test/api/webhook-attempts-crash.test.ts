import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { reconcileScheduleId } from '../../src/contracts/reconcile-contract';
import { deliveryWorkflowId } from '../../src/contracts/webhooks-contract';
import { reseller, startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { killed } from '../helpers/processes';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// Issue 27 item 2, with real faults: a delivery's attempts never exceed WEBHOOK_MAX_ATTEMPTS.
// The worker is the production `npm run worker` process, SIGKILLed while its POST is held open by
// the receiver; and a delivery whose workflow Temporal lost between attempts is started again by
// the reconciler (its schedule, in that same worker process), which spends what is left of the
// delivery's budget, not a fresh one. The delivery log is read as the reseller reads it.
const MAX = 3;
const env = {
  WEBHOOK_ALLOW_INSECURE_URLS: 'true',
  WEBHOOK_MAX_ATTEMPTS: String(MAX),
  // Long enough to SIGKILL the worker while the receiver holds the POST open; the activity's
  // retry then comes after its start-to-close timeout (this plus 30 s).
  WEBHOOK_TIMEOUT_MS: '8000',
  // Long enough to see the delivery waiting between attempts and terminate its run then.
  WEBHOOK_RETRY_BASE_SECONDS: '4',
  WEBHOOK_RETRY_CAP_SECONDS: '4',
  RECONCILE_SECONDS: '2',
  RECONCILE_GRACE_SECONDS: '1',
};
let h: Harness;
let receiver: Receiver;
let worker: ChildProcess;

beforeAll(async () => {
  // The API here; the worker (and the reconciler's schedule it creates) in its own process.
  h = await startHarness(env, { worker: false });
  receiver = await startReceiver();
  receiver.otherwise = 500;
  worker = startWorkerProcess(h, env);
});
afterAll(async () => {
  await killed(worker);
  await h?.services.temporal.client.schedule
    .getHandle(reconcileScheduleId(h.config.TEMPORAL_TASK_QUEUE))
    .delete()
    .catch(() => undefined);
  await receiver?.close();
  await h?.stop();
});

async function stored(deliveryId: string) {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ status: string; attempts: number; attempt_open: boolean }[]>(
      'select status, attempts, attempt_open from webhook_deliveries where id = ?',
      [deliveryId],
    );
  return row;
}

/** The delivery ids (`<deliveryId>.<attempt>`) of every request the receiver got for `eventId`, in order. */
const sentFor = (eventId: string) =>
  receiver.received.filter((r) => r.body?.eventId === eventId).map((r) => r.headers['x-wholesale-delivery-id']);

/** A `webhook.test` event and its delivery, started as the API starts it. */
async function testEvent() {
  const { api } = await reseller(h);
  expect((await api.put('/webhook', { url: receiver.url })).status).toBe(200);
  const sent = await api.post('/webhook/test', {});
  expect(sent.status).toBe(200);
  return { api, deliveryId: sent.body.deliveryId as string, eventId: sent.body.eventId as string };
}

async function failedAfterAll(api: Awaited<ReturnType<typeof testEvent>>['api'], deliveryId: string) {
  const row = await eventually(
    async () => {
      const r = await stored(deliveryId);
      return r.status === 'failed' ? r : undefined;
    },
    120_000,
    250,
    `delivery ${deliveryId} failed`,
  );
  const listed = (await api.get('/webhook/deliveries?limit=100')).body.deliveries.find(
    (d: { id: string }) => d.id === deliveryId,
  );
  return { row, listed };
}

test('SIGKILL of the worker mid-POST: the killed attempt is sent again as itself and counted once; never more than WEBHOOK_MAX_ATTEMPTS', async () => {
  receiver.script(['hang']);
  const { api, deliveryId, eventId } = await testEvent();
  // The worker may still be starting: its first POST comes when it polls.
  await receiver.waitFor(1, (all) => all.filter((r) => r.body?.eventId === eventId), 90_000);
  expect(await stored(deliveryId)).toEqual({ status: 'pending', attempts: 1, attempt_open: true });

  worker.kill('SIGKILL');
  await once(worker, 'exit');
  worker = startWorkerProcess(h, env);

  const { row, listed } = await failedAfterAll(api, deliveryId);
  expect(row).toEqual({ status: 'failed', attempts: MAX, attempt_open: false });
  expect(listed).toMatchObject({ status: 'failed', attempts: MAX, lastStatusCode: 500 });
  // Attempt 1 twice (cut short by the kill, then sent again under its own id), then 2 and 3.
  expect(sentFor(eventId)).toEqual([`${deliveryId}.1`, `${deliveryId}.1`, `${deliveryId}.2`, `${deliveryId}.3`]);
}, 240_000);

test('a delivery whose run Temporal lost between attempts: the reconciler starts it again, and the attempts made count against its budget', async () => {
  const { api, deliveryId, eventId } = await testEvent();
  // Two attempts made and recorded, the third waiting on its backoff timer: Temporal loses the run.
  await eventually(
    async () => {
      const r = await stored(deliveryId);
      return r.attempts === 2 && !r.attempt_open && r.status === 'pending';
    },
    90_000,
    50,
    'two attempts recorded',
  );
  await h.services.temporal.client.workflow
    .getHandle(deliveryWorkflowId(deliveryId))
    .terminate('test: Temporal lost this workflow');

  const { row, listed } = await failedAfterAll(api, deliveryId);
  const repairs = await h.services.orm.em
    .fork()
    .execute<{ kind: string; action: string }[]>('select kind, action from reconciler_repairs where subject_id = ?', [
      deliveryId,
    ]);
  expect(repairs).toEqual([{ kind: 'webhook_delivery', action: 'restarted' }]);
  // One attempt left of the budget, not a fresh budget of MAX.
  expect(row).toEqual({ status: 'failed', attempts: MAX, attempt_open: false });
  expect(listed).toMatchObject({ status: 'failed', attempts: MAX });
  expect(sentFor(eventId)).toEqual([`${deliveryId}.1`, `${deliveryId}.2`, `${deliveryId}.3`]);
}, 180_000);
