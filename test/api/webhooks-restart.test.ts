import type { WorkflowBundleOption } from '@temporalio/worker';
import { createActivities } from '../../activities/all-activities';
import { createWorker } from '../../src/temporal/temporal-worker';
import { testWorkflowBundle } from '../helpers/workflow-bundle';
import { startHarness, type Harness } from '../helpers/harness';
import { client, eventually } from '../helpers/http';
import { startReceiver, verifySignature, type Receiver } from '../helpers/webhook-receiver';

// Issue 5: the retries of a delivery are durable timers, so a delivery whose worker stops while
// it waits between attempts is still delivered by a new worker on the same task queue.
const BASE_S = 3;
let h: Harness;
let bundle: WorkflowBundleOption;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    WEBHOOK_RETRY_BASE_SECONDS: String(BASE_S),
    WEBHOOK_RETRY_CAP_SECONDS: String(BASE_S),
    WEBHOOK_TIMEOUT_MS: '500',
    WEBHOOK_MAX_ATTEMPTS: '3',
  });
  bundle = await testWorkflowBundle();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

test('a delivery survives a worker restart mid-backoff and is delivered by the new worker', async () => {
  const { apiKey } = await h.account();
  const api = client(h.apiUrl, apiKey);
  const { secret } = (await api.put('/webhook', { url: receiver.url })).body;
  receiver.script([500]);
  const { deliveryId, eventId } = (await api.post('/webhook/test', {})).body;
  await receiver.waitFor(1);
  const waiting = async () => {
    const d = (await api.get('/webhook/deliveries')).body.deliveries.find((x: any) => x.id === deliveryId);
    return d?.status === 'pending' && d.attempts === 1 && d.nextAttemptAt !== null ? d : undefined;
  };
  await eventually(waiting);

  // Stop the only worker while the workflow sleeps on its backoff timer.
  const old = h.services.worker!;
  old.shutdown();
  await eventually(async () => old.getState() === 'STOPPED');
  const stoppedAt = Date.now();
  expect(await waiting()).toBeTruthy();
  expect(receiver.received).toHaveLength(1);

  const replacement = await createWorker({
    address: h.config.TEMPORAL_ADDRESS!,
    namespace: h.config.TEMPORAL_NAMESPACE,
    taskQueue: h.config.TEMPORAL_TASK_QUEUE,
    config: h.config,
    workflowBundle: bundle,
    activities: createActivities({
      orm: h.services.orm,
      config: h.config,
      providers: h.services.providers,
      temporal: h.services.temporal,
    }),
  });
  const run = replacement.worker.run();
  try {
    const got = await receiver.waitFor(2, undefined, 60_000);
    expect(got[1].at).toBeGreaterThan(stoppedAt);
    expect(got[1].headers).toMatchObject({
      'x-wholesale-event-id': eventId,
      'x-wholesale-delivery-id': `${deliveryId}.2`,
    });
    expect(verifySignature(secret, got[1].raw, got[1].headers['x-wholesale-signature'])).toBe(true);
    const d = await eventually(async () => {
      const x = (await api.get('/webhook/deliveries')).body.deliveries.find((y: any) => y.id === deliveryId);
      return x?.status === 'succeeded' ? x : undefined;
    });
    expect(d).toMatchObject({ attempts: 2, lastStatusCode: 200, lastError: null });
  } finally {
    replacement.worker.shutdown();
    await run;
    await replacement.connection.close();
  }
});
