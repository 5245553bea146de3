import { deliveryStarter } from '../../src/temporal/starters';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { eventually } from '../helpers/http';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

// Issue 27 item 2: attempts counted exactly. An attempt is claimed in Postgres before its POST; a
// worker that dies mid-POST leaves it claimed and unrecorded, and the activity's retry (on another
// worker) is that same attempt, under the same delivery id, not a new one. The dead worker's state
// is made by hand (a claimed attempt with no result), as the worker would have left it; the
// delivery's workflow then runs it to the end on a receiver that always fails: exactly
// WEBHOOK_MAX_ATTEMPTS attempts, never one more.
const MAX = 3;
let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    WEBHOOK_MAX_ATTEMPTS: String(MAX),
    WEBHOOK_RETRY_BASE_SECONDS: '1',
    WEBHOOK_RETRY_CAP_SECONDS: '1',
    WEBHOOK_TIMEOUT_MS: '1000',
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

async function deliveryRow(id: string) {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ status: string; attempts: number; attempt_open: boolean }[]>(
      'select status, attempts, attempt_open from webhook_deliveries where id = ?',
      [id],
    );
  return row;
}

test.each([
  ['succeeds: the retried attempt is attempt 1 again, counted once', 200, 'succeeded', 1],
  ['always fails: exactly WEBHOOK_MAX_ATTEMPTS attempts, the interrupted one among them', 500, 'failed', MAX],
] as const)(
  'a delivery whose first attempt was claimed and never recorded (its worker died mid-POST) %s',
  async (_name, reply, status, attempts) => {
    const { api, accountId } = await reseller(h);
    expect((await api.put('/webhook', { url: receiver.url })).status).toBe(200);
    const id = `whd_claimed_${reply}`;
    const em = h.services.orm.em.fork();
    await em.execute(
      `insert into events (id, account_id, type, payload, dispatched_at) values (?, ?, 'webhook.test', '{"message":"claimed"}', now())`,
      [`evt_claimed_${reply}`, accountId],
    );
    // As the dead worker left it: attempt 1 claimed (its POST may or may not have reached the receiver), no result.
    await em.execute(
      `insert into webhook_deliveries (id, event_id, account_id, status, attempts, attempt_open, next_attempt_at)
                    values (?, ?, ?, 'pending', 1, true, now())`,
      [id, `evt_claimed_${reply}`, accountId],
    );
    const before = receiver.otherwise;
    receiver.otherwise = (r) => (r.body?.eventId === `evt_claimed_${reply}` ? reply : 200);

    await deliveryStarter(h.services.temporal, h.config, { id, accountId }).start();
    const row = await eventually(async () => {
      const r = await deliveryRow(id);
      return r.status === status ? r : undefined;
    }, 30_000).finally(() => (receiver.otherwise = before));
    expect(row).toEqual({ status, attempts, attempt_open: false });
    const sent = receiver.received
      .filter((r) => r.body?.eventId === `evt_claimed_${reply}`)
      .map((r) => r.headers['x-wholesale-delivery-id']);
    expect(sent).toEqual(Array.from({ length: attempts }, (_, i) => `${id}.${i + 1}`));
  },
);
