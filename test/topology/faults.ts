// Fault tests on the topology harness: 2 API processes and 2 worker processes
// (`npm run api`, `npm run worker`), their own Postgres and Temporal, under the mixed soak.
// One topology serves the tests, in order (each with its own accounts); the destructive ones come
// last. The same tests run on the Temporal dev server and on the production Temporal server with
// its SQL persistence on the topology's Postgres (test/topology/faults.test.ts runs both, one
// after the other). Sizes are small for CI; SOAK_SCALE=N scales the traffic and the outages.
//
//   SOAK_SCALE=1            traffic size multiplier (operations, soak seconds)
//   SOAK_SEED=123           the seed of the traffic and of the worker kills (printed either way)
//   WORKERS_DOWN_SECONDS    all workers down this long (default 20, as the fault plan says)
//   POSTGRES_DOWN_SECONDS   Postgres stopped this long (default 15)
//   TEMPORAL_DOWN_SECONDS   Temporal stopped this long (default 8)
import { prng, Soak, SOAK_SERVICE_ENV, PRODUCTS, soakTargetOf, type Account, type HttpStat } from './soak';
import { withPg } from './pg-once';
import { startTopology, type TemporalMode, type Topology } from './harness';

const SCALE = Math.max(1, Number(process.env.SOAK_SCALE ?? 1));
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const WORKERS_DOWN_S = Number(process.env.WORKERS_DOWN_SECONDS ?? 20);
const POSTGRES_DOWN_S = Number(process.env.POSTGRES_DOWN_SECONDS ?? 15);
const TEMPORAL_DOWN_S = Number(process.env.TEMPORAL_DOWN_SECONDS ?? 8);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The fault tests on a topology whose Temporal is the dev server or the production server. */
export function defineFaultTests(mode: TemporalMode): void {
  describe(`on the ${mode === 'dev' ? 'dev server' : 'production Temporal server (SQL persistence)'}`, () => {
    let t: Topology;
    const faults: string[] = [];
    let noWorkerProbe: { status: HttpStat['status']; ms: number; body: any } | undefined;
    let workersBackAfterMs = 0;

    beforeAll(async () => {
      console.log(
        `topology faults on the ${mode} Temporal: seed ${SEED} (SOAK_SEED=${SEED} replays the same traffic and kills), scale ${SCALE}`,
      );
      t = await startTopology({ apis: 2, workers: 2, env: SOAK_SERVICE_ENV, temporal: mode });
    }, 240_000);

    afterAll(async () => {
      await t?.teardown();
    }, 120_000);

    /** Runs a test body; on failure prints the topology's event log and every process's log tail. */
    async function withLogs(name: string, fn: () => Promise<void>) {
      const started = Date.now();
      try {
        await fn();
      } catch (err) {
        console.error(`${name} failed (seed ${SEED})\n${t.dumpLogs(80)}`);
        throw err;
      } finally {
        console.log(`${name}: ${Math.round((Date.now() - started) / 1000)} s`);
      }
    }

    function newSoak(seed: number, plan: Partial<ConstructorParameters<typeof Soak>[1]> = {}) {
      return new Soak(soakTargetOf(t, process.env.TEMPORAL_PAYLOAD_KEYS!), {
        seed,
        durationMs: 30_000 * SCALE,
        maxOps: 120 * SCALE,
        accounts: 6,
        concurrency: 4,
        log: (l) => t.log(l),
        ...plan,
      });
    }

    /** The soak's report must hold every invariant; it is printed either way. */
    async function expectInvariants(soak: Soak, label: string) {
      const left = await soak.drain(120_000);
      const report = await soak.check({ strict: true, faults });
      console.log(`${label}\n${report.text}`);
      expect(left).toEqual([]);
      // Every broken invariant but the API's own 5xx answers fails here; those are asserted by
      // expectNoServerErrors at the end of each test, so that a 5xx does not hide the rest.
      expect(report.violations.filter((v) => !isServerError(v))).toEqual([]);
      expect(Number(report.counts['acknowledged orders and top-ups'])).toBeGreaterThan(0);
      return report;
    }

    const isServerError = (violation: string) => /^(POST|GET|PUT) \S+ on api-\d+: 5\d\d /.test(violation);

    /** No answer of the API was a 5xx other than a 503 with retryable: true. */
    function expectNoServerErrors(report: { violations: string[] }) {
      expect(report.violations.filter(isServerError)).toEqual([]);
    }

    /** Raw POSTs of one request to both API processes at once (racing), answers in order. */
    async function race(soak: Soak, account: Account, path: string, bodies: unknown[], apis: number[]) {
      return Promise.all(
        bodies.map((b, i) => soak.request(account, 'POST', path, b, { api: apis[i % apis.length], retries: 0 })),
      );
    }

    /** Waits until the wall clock is at least `margin` seconds away from the end of the current window. */
    async function awayFromWindowEnd(windowSeconds: number, marginSeconds: number) {
      for (;;) {
        const into = (Date.now() / 1000) % windowSeconds;
        if (windowSeconds - into > marginSeconds) return;
        await sleep((windowSeconds - into + 0.5) * 1000);
      }
    }

    const ok = (s: HttpStat) => s.status === 200;

    test(
      'rate limit, top-up quota and the unpaid limit hold exactly across two API processes',
      () =>
        withLogs('limits', async () => {
          const soak = newSoak(SEED, { accounts: 3, webhooks: false });
          try {
            await soak.setup();
            const [perMinute, quota, unpaid] = soak.accounts;

            // 301 requests of one key, spread over both processes, inside one minute: exactly 300 pass.
            await awayFromWindowEnd(60, 25);
            const answers: HttpStat[] = [];
            let next = 0;
            await Promise.all(
              Array.from({ length: 24 }, async () => {
                while (next < 301) {
                  const i = next++;
                  answers.push(await soak.request(perMinute, 'GET', '/balance', undefined, { api: i % 2, retries: 0 }));
                }
              }),
            );
            const byStatus = countStatuses(answers);
            expect(byStatus).toEqual({ 200: 300, 429: 1 });
            expect(
              answers
                .filter((a) => a.status === 200)
                .map((a) => a.api)
                .filter((a) => a === 1).length,
            ).toBeGreaterThan(100);

            // Top-up quota (20/hour, replays count): 25 racing replays of one top-up over both processes.
            await awayFromWindowEnd(3600, 30);
            const replay = { externalTopupId: 'quota-1', amount: '10.00', currency: 'USDT' };
            const quotaAnswers = await race(soak, quota, '/topup', Array(25).fill(replay), [0, 1]);
            expect(countStatuses(quotaAnswers)).toEqual({ 200: 20, 429: 5 });
            expect(new Set(quotaAnswers.filter(ok).map((a) => a.body.orderId)).size).toBe(1);
            expect(
              quotaAnswers
                .filter((a) => a.status === 429)
                .every((a) => a.body.error === 'rate_limited' && a.body.retryable === true),
            ).toBe(true);

            // At most 5 unpaid top-ups: 9 racing new top-ups over both processes, exactly 5 open.
            const distinct = Array.from({ length: 9 }, (_, i) => ({
              externalTopupId: `unpaid-${i}`,
              amount: '10.00',
              currency: 'USDT',
            }));
            const unpaidAnswers = await race(soak, unpaid, '/topup', distinct, [0, 1]);
            expect(countStatuses(unpaidAnswers)).toEqual({ 200: 5, 429: 4 });
            expect(
              unpaidAnswers.filter((a) => a.status === 429).every((a) => a.body.error === 'too_many_pending_topups'),
            ).toBe(true);
            const pending = await pgQuery(
              `select count(*)::int as n from orders where account_id = $1 and kind = 'topup' and status = 'pending'`,
              [unpaid.accountId],
            );
            expect(pending[0].n).toBe(5);
            faults.push(
              'limits: 301 GET /balance on one key over 2 APIs; 25 racing replays of one top-up; 9 racing new top-ups',
            );
          } finally {
            await soak.close();
          }
        }),
      180_000,
    );

    test(
      'SIGKILL of workers at seeded random moments, then every worker down: invariants hold, every workflow completes',
      () =>
        withLogs('worker kills', async () => {
          const soak = newSoak(SEED + 1, { durationMs: 45_000 * SCALE, maxOps: 160 * SCALE });
          const rnd = prng(SEED);
          try {
            await soak.setup();
            let trafficDone = false;
            const traffic = soak.run().finally(() => (trafficDone = true));
            let kills = 0;
            // A worker takes 15-30 s to start on a loaded 2-core machine. The victims take turns, each
            // killed at a random moment once the others are up (so that work keeps moving).
            while (!trafficDone) {
              await sleep(rnd.int(2000, 6000));
              if (trafficDone) break;
              const victim = t.workers[kills % t.workers.length];
              await Promise.all(t.workers.filter((w) => w !== victim).map((w) => t.waitReady(w)));
              if (trafficDone) break;
              // The deadline invariant excuses the kill and its recovery (see soak-deadlines).
              const recovered = soak.fault();
              await t.kill(victim, 'SIGKILL');
              kills++;
              faults.push(`SIGKILL ${victim.name} at ${new Date().toISOString()} (kill #${kills})`);
              await sleep(rnd.int(0, 1500));
              await t.startProc(victim, { waitReady: false });
              recovered();
            }
            await traffic;
            await Promise.all(t.workers.map((w) => t.waitReady(w)));
            expect(kills).toBeGreaterThan(0);

            // Every worker down: workflows wait in Temporal (timers come due, payments arrive as
            // signals) and all of it resumes when the workers are back. One placement is tried
            // meanwhile; what it answered is asserted by the next test.
            const workersBack = soak.fault();
            await Promise.all(t.workers.map((w) => t.kill(w, 'SIGKILL')));
            faults.push(`SIGKILL all ${t.workers.length} workers for ${WORKERS_DOWN_S} s`);
            const downAt = Date.now();
            const probeAccount = soak.accounts[0];
            const probe = rawPost(
              t.apis[1].apiUrl,
              probeAccount.apiKey,
              '/orders',
              { externalOrderId: 'no-worker-probe', productId: PRODUCTS.plus, qty: 1 },
              60_000,
            ).then((r) => (noWorkerProbe = r));
            // Open checkouts are paid while no worker runs: the callbacks only signal the workflows.
            const waiting = (
              await pgQuery(
                `select checkout_url from orders where account_id = any($1) and status = 'pending' and checkout_url is not null`,
                [soak.accounts.map((a) => a.accountId)],
              )
            ).map((r) => r.checkout_url as string);
            const paidMeanwhile = await Promise.all(
              waiting.map((url) =>
                fetch(`${url}/pay`, { method: 'POST', body: '' })
                  .then((r) => r.status)
                  .catch(() => 0),
              ),
            );
            faults.push(`${paidMeanwhile.filter((x) => x === 200).length} checkouts paid while no worker ran`);
            await sleep(Math.max(0, WORKERS_DOWN_S * 1000 - (Date.now() - downAt)));
            workersBackAfterMs = Date.now() - downAt;
            await Promise.all(t.workers.map((w) => t.startProc(w)));
            workersBack();
            await probe;

            const report = await expectInvariants(soak, `worker kills (seed ${SEED}, ${kills} kills)`);
            expect(t.crashes()).toEqual([]);
            expectNoServerErrors(report);
          } finally {
            await soak.close();
          }
        }),
      600_000,
    );

    // With every worker down, a placement answers while they are down (a retryable 503 after
    // PLACEMENT_TIMEOUT_MS), not when a worker comes back: the caller cannot tell a wait without a
    // deadline from a hang. (Found by this harness: it used to wait as long as the workers were gone.)
    test('a placement tried while every worker is down answers 503 retryable before any worker is back, not a hang', () => {
      console.log(
        `placement while every worker was down (${workersBackAfterMs} ms until the workers were started again): ${JSON.stringify(noWorkerProbe)}`,
      );
      expect(noWorkerProbe).toBeDefined();
      expect({ status: noWorkerProbe!.status, retryable: noWorkerProbe!.body?.retryable }).toEqual({
        status: 503,
        retryable: true,
      });
      expect(noWorkerProbe!.ms).toBeLessThan(workersBackAfterMs);
    });

    test(
      'the Temporal server restarted under load: windows, procurement and webhook backoffs resume; placement answers 503 retryable meanwhile',
      () =>
        withLogs('temporal restart', async () => {
          const soak = newSoak(SEED + 3, { durationMs: 25_000 * SCALE });
          try {
            await soak.setup();
            const traffic = soak.run();
            await sleep(8_000);
            // Right before the stop: an intent order to pay while Temporal is down, one left unpaid, a
            // gift-card order in its supplier backoff (partial rounds), and webhook retries under way.
            const [payer] = soak.accounts;
            const paidLater = await soak.request(
              payer,
              'POST',
              '/orders',
              { externalOrderId: 'restart-paid', productId: PRODUCTS.plus, qty: 1, payment: 'intent' },
              { retries: 5 },
            );
            const unpaid = await soak.request(
              payer,
              'POST',
              '/orders',
              { externalOrderId: 'restart-unpaid', productId: PRODUCTS.plus, qty: 1, payment: 'intent' },
              { retries: 5 },
            );
            const gift = await soak.request(
              payer,
              'POST',
              '/orders',
              { externalOrderId: 'restart-gift', productId: PRODUCTS.giftPartial, qty: 3 },
              { retries: 5 },
            );
            expect([paidLater.status, unpaid.status, gift.status]).toEqual([200, 200, 200]);
            const before = await soak.workflows();
            const running = (type: string) => before.filter((w) => w.type === type && w.status === 'RUNNING').length;
            expect(running('orderWorkflow')).toBeGreaterThan(0);
            expect(running('procurementWorkflow') + running('webhookDeliveryWorkflow')).toBeGreaterThan(0);

            // A burst of placements racing the stop: some have written their order to Postgres (the
            // placement's local activity) when the server goes away in the middle of their workflow task.
            const burst = Promise.all(
              Array.from({ length: 12 }, (_, i) => soak.runOp(i % 3 === 0 ? 'intentOrder' : 'balanceOrder')),
            );
            await sleep(400);
            const temporalBack = soak.fault();
            await t.stopTemporal();
            const downAt = Date.now();
            let placement: HttpStat;
            let paid: number;
            try {
              faults.push(
                `Temporal server stopped for ${TEMPORAL_DOWN_S} s or more (running then: ${JSON.stringify(countRunning(before))})`,
              );
              // While it is down: placement answers a clear retryable error; the payer pays.
              placement = await soak.request(
                payer,
                'POST',
                '/orders',
                { externalOrderId: 'restart-during', productId: PRODUCTS.plus, qty: 1 },
                { api: 1, retries: 0 },
              );
              paid = await fetch(`${paidLater.body.checkoutUrl}/pay`, { method: 'POST', body: '' }).then(
                (r) => r.status,
                () => 0,
              );
              await sleep(Math.max(0, TEMPORAL_DOWN_S * 1000 - (Date.now() - downAt)));
            } finally {
              await t.startTemporal();
              temporalBack();
            }
            faults.push(
              `Temporal was down ${Math.round((Date.now() - downAt) / 1000)} s; a placement meanwhile answered ${placement.status} in ${placement.ms} ms`,
            );
            expect(placement.status).toBe(503);
            expect(placement.body).toMatchObject({ error: 'service_unavailable', retryable: true });
            expect(Number(placement.retryAfter)).toBeGreaterThan(0);
            expect(placement.ms).toBeLessThan(30_000);
            expect(paid).toBe(200);
            await Promise.all([traffic, burst]);

            const report = await expectInvariants(soak, 'temporal restart');
            const order = async (ext: string) =>
              (
                await pgQuery(
                  'select status, fulfillment_status, fulfilled_quantity from orders where account_id = $1 and external_order_id = $2',
                  [payer.accountId, ext],
                )
              )[0];
            expect(await order('restart-paid')).toMatchObject({ status: 'delivered' });
            expect(await order('restart-unpaid')).toMatchObject({ status: 'expired' });
            expect(await order('restart-gift')).toMatchObject({
              status: 'delivered',
              fulfillment_status: 'delivered',
              fulfilled_quantity: 3,
            });
            // The placement refused while Temporal was down was refused cleanly: no order behind it.
            expect(await order('restart-during')).toBeUndefined();
            expect(
              Number(report.counts['deliveries fail/failed'] ?? 0) +
                Number(report.counts['deliveries ok/succeeded'] ?? 0),
            ).toBeGreaterThan(0);
            expect(t.crashes()).toEqual([]);
            expectNoServerErrors(report);
          } finally {
            await soak.close();
          }
        }),
      420_000,
    );

    test(
      'Postgres stopped under load: 503 retryable within seconds meanwhile, nothing acknowledged is lost, everything recovers without a restart',
      () =>
        withLogs('postgres outage', async () => {
          const soak = newSoak(SEED + 4, {
            durationMs: (POSTGRES_DOWN_S + 25) * 1000,
            maxOps: 400 * SCALE,
            requestTimeoutMs: 30_000,
          });
          try {
            await soak.setup();
            const starts = t.all.map((p) => p.starts);
            const traffic = soak.run();
            await sleep(6_000);
            const postgresBack = soak.fault();
            await t.stopPostgres();
            const down = { from: Date.now(), to: 0 };
            faults.push(`Postgres stopped (fast shutdown) for ${POSTGRES_DOWN_S} s`);
            // Probes during the outage, to each API process: a clean 503 with retryable: true, quickly.
            const probes: HttpStat[] = [];
            while (Date.now() - down.from < POSTGRES_DOWN_S * 1000) {
              const account = soak.accounts[probes.length % soak.accounts.length];
              probes.push(
                await soak.request(
                  account,
                  'POST',
                  '/orders',
                  { externalOrderId: `outage-${probes.length}`, productId: PRODUCTS.plus, qty: 1 },
                  { api: probes.length % 2, retries: 0 },
                ),
              );
              probes.push(
                await soak.request(account, 'GET', '/balance', undefined, { api: probes.length % 2, retries: 0 }),
              );
              await sleep(500);
            }
            down.to = Date.now();
            await t.startPostgres();
            postgresBack();
            await traffic;

            expect(probes.length).toBeGreaterThan(6);
            for (const p of probes) {
              expect({
                status: p.status,
                error: p.body?.error,
                retryable: p.body?.retryable,
                retryAfter: Number(p.retryAfter) > 0,
              }).toEqual({ status: 503, error: 'service_unavailable', retryable: true, retryAfter: true });
              expect(p.ms).toBeLessThan(8_000);
            }
            // Every answer the soak got while Postgres was down was a 503 (never a 5xx of another kind:
            // the checker counts those as violations) or an answer from before the stop.
            const inOutage = soak.http.filter((h) => h.at > down.from + 1000 && h.at + h.ms < down.to);
            expect(inOutage.filter((h) => h.status !== 503 && h.status !== 429)).toEqual([]);

            // Recovered without a restart: both APIs place orders again, the workers finish the work.
            for (const [i, api] of t.apis.entries()) {
              const after = await soak.request(
                soak.accounts[0],
                'POST',
                '/orders',
                { externalOrderId: `after-outage-${i}`, productId: PRODUCTS.plus, qty: 1 },
                { api: i, retries: 20 },
              );
              // The answer's body beside its status, so a refusal says which (admission's reason, or Postgres).
              expect([api.name, after.status, after.status === 200 ? null : after.body]).toEqual([api.name, 200, null]);
            }
            const report = await expectInvariants(soak, 'postgres outage');
            expect(t.all.map((p) => p.starts)).toEqual(starts);
            expect(t.crashes()).toEqual([]);
            // The probes placed nothing.
            const probeOrders = await pgQuery(
              `select count(*)::int as n from orders where external_order_id like 'outage-%'`,
              [],
            );
            expect(probeOrders[0].n).toBe(0);
            expectNoServerErrors(report);
          } finally {
            await soak.close();
          }
        }),
      420_000,
    );

    /** One POST outside the soak's bookkeeping, with a client deadline (`timeout` when it passes). */
    async function rawPost(apiUrl: string, key: string, path: string, body: unknown, timeoutMs: number) {
      const t0 = Date.now();
      try {
        const res = await fetch(`${apiUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await res.text();
        return {
          status: res.status as HttpStat['status'],
          ms: Date.now() - t0,
          body: text ? JSON.parse(text) : undefined,
        };
      } catch (err) {
        return {
          status: ((err as Error).name === 'TimeoutError' ? 'timeout' : 'network') as HttpStat['status'],
          ms: Date.now() - t0,
          body: undefined,
        };
      }
    }

    function countStatuses(xs: HttpStat[]): Record<string, number> {
      const out: Record<string, number> = {};
      for (const x of xs) out[String(x.status)] = (out[String(x.status)] ?? 0) + 1;
      return out;
    }

    function countRunning(xs: { type: string; status: string }[]): Record<string, number> {
      const out: Record<string, number> = {};
      for (const x of xs.filter((w) => w.status === 'RUNNING')) out[x.type] = (out[x.type] ?? 0) + 1;
      return out;
    }

    async function pgQuery(sql: string, params: unknown[]): Promise<any[]> {
      return withPg(t.databaseUrl, async (c) => (await c.query(sql, params)).rows);
    }
  });
}
