// The mixed-traffic soak. Used by bench/soak.ts and by the fault tests in this
// directory. It talks to the service only the way clients do (HTTP to any of the API processes, the
// hosted checkout's Pay button, webhook receivers), creates its accounts through the operators'
// services (as `npx wholesale accounts create` / `balance adjust` do), and checks at the end from
// Postgres, from the API and from Temporal's visibility (./soak-invariants, ./soak-report), and
// while it runs, every row's deadline (./soak-deadlines).
import { randomBytes } from 'node:crypto';
import type { Client as PgClient } from 'pg';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { loadConfig } from '../../src/config';
import { initOrm } from '../../src/db/orm';
import { createAccount } from '../../src/services/accounts/accounts';
import { adjustBalance } from '../../src/services/payments/admin';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { topupWorkflowId } from '../../src/contracts/topups-contract';
import { HookReceivers } from './hook-receivers';
import { withPg } from './pg-once';
import { DeadlineWatch } from './soak-deadlines';
import {
  checkApiReadback,
  checkStoredState,
  checkWorkflows,
  readSnapshot,
  type Findings,
  type ListedWorkflow,
  type Snapshot,
} from './soak-invariants';
import {
  PRODUCTS,
  prng,
  type Account,
  type Ack,
  type HttpStat,
  type Op,
  type Report,
  type SoakPlan,
  type SoakTarget,
} from './soak-model';
import { soakReport } from './soak-report';

export * from './soak-model';
export { HookReceivers } from './hook-receivers';

const TEAM_INFO = { account_id: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', email: 'jane@example.com' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const is2xx = (s: HttpStat) => typeof s.status === 'number' && s.status >= 200 && s.status < 300;

/** Runs mixed traffic against the given API processes; `check()` verifies every invariant. */
export class Soak {
  readonly accounts: Account[] = [];
  readonly acks = new Map<string, Ack>();
  readonly http: HttpStat[] = [];
  readonly violations: string[] = [];
  readonly counts: Record<string, number> = {};
  readonly receivers = new HookReceivers();
  private readonly rnd;
  private readonly pending = new Set<Promise<unknown>>();
  private seq = 0;
  private startedAt = new Date();
  private temporal?: { client: TemporalClient; connection: Connection };
  private readonly runId = randomBytes(3).toString('hex');
  private readonly deadlines: DeadlineWatch;
  stopRequested = false;

  constructor(
    readonly target: SoakTarget,
    readonly plan: SoakPlan,
  ) {
    this.rnd = prng(plan.seed);
    this.deadlines = new DeadlineWatch(
      target.deadlines,
      () => this.accounts.map((a) => a.accountId),
      (fn) => this.pg(fn),
    );
  }

  /**
   * A fault the driver injects (a worker killed, every worker down, Temporal or Postgres stopped)
   * begins now; call the returned function when it is over. The deadline invariant excuses its
   * time and its recovery.
   */
  fault(): () => void {
    return this.deadlines.fault();
  }

  private log(line: string) {
    this.plan.log?.(line);
  }

  private count(name: string, n = 1) {
    this.counts[name] = (this.counts[name] ?? 0) + n;
  }

  private violation(text: string) {
    this.violations.push(text);
    this.log(`VIOLATION ${text}`);
  }

  /** Accounts (funded through the operators' services) and their webhook receivers. */
  async setup(): Promise<void> {
    this.startedAt = new Date(Date.now() - 5_000);
    await this.receivers.start();
    const thresholds = loadConfig({}).LEVEL_THRESHOLDS;
    const orm = await initOrm(this.target.databaseUrl);
    try {
      const modes = this.plan.hookModes ?? ['ok', 'ok', 'fail', 'hang', 'redirect'];
      for (let i = 0; i < this.plan.accounts; i++) {
        const em = orm.em.fork();
        const created = await createAccount(em, `soak-${this.runId}-${i}`);
        await adjustBalance(em, {
          accountId: created.accountId,
          amount: this.plan.funding ?? '2000.00',
          note: 'soak funding',
          levelThresholds: thresholds,
        });
        const account: Account = { ...created, hook: modes[i % modes.length], topups: 0 };
        if (this.plan.webhooks !== false) {
          const put = await this.request(
            account,
            'PUT',
            '/webhook',
            { url: this.receivers.url(account.hook, account.accountId) },
            { retries: 10 },
          );
          if (put.status !== 200) throw new Error(`PUT /webhook: ${put.status} ${JSON.stringify(put.body)}`);
        }
        this.accounts.push(account);
      }
    } finally {
      await orm.close(true);
    }
    this.log(`soak: ${this.accounts.length} accounts, receivers at ${this.receivers.base}`);
  }

  /**
   * One HTTP request to one API process (random unless `api` is given), with a client deadline.
   * A 429 or a retryable 503 is retried (as a client would, with the same ids) up to `retries`
   * times; a 503 without `retryable: true`, any other 5xx, or no answer is a violation.
   */
  async request(
    account: Account,
    method: string,
    path: string,
    body?: unknown,
    opts: { api?: number; retries?: number } = {},
  ): Promise<HttpStat> {
    let attempt = 0;
    for (;;) {
      const api = opts.api ?? this.rnd.int(0, this.target.apiUrls.length - 1);
      const t0 = Date.now();
      let stat: HttpStat;
      try {
        const res = await fetch(`${this.target.apiUrls[api]}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${account.apiKey}`,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(this.plan.requestTimeoutMs ?? 30_000),
        });
        const text = await res.text();
        let parsed: any;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = text;
        }
        stat = {
          status: res.status,
          ms: Date.now() - t0,
          path,
          api,
          at: t0,
          body: parsed,
          retryAfter: res.headers.get('retry-after') ?? undefined,
        };
      } catch (err) {
        const name = (err as Error).name;
        stat = {
          status: name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'network',
          ms: Date.now() - t0,
          path,
          api,
          at: t0,
        };
      }
      const payment =
        path === '/orders' && body && typeof body === 'object'
          ? String((body as { payment?: string }).payment ?? 'balance')
          : undefined;
      this.http.push({ ...stat, method, payment, body: undefined });
      this.count(`http ${stat.status}`);
      if (stat.status === 'timeout')
        this.violation(`${method} ${path} on api-${api}: no answer within ${this.plan.requestTimeoutMs ?? 30_000} ms`);
      if (typeof stat.status === 'number' && stat.status >= 500) {
        if (stat.status !== 503 || stat.body?.retryable !== true || stat.body?.error !== 'service_unavailable') {
          this.violation(`${method} ${path} on api-${api}: ${stat.status} ${JSON.stringify(stat.body).slice(0, 300)}`);
        }
      }
      const retryable = stat.status === 429 || stat.status === 503 || stat.status === 'network';
      if (!retryable || attempt >= (opts.retries ?? 8)) return stat;
      attempt++;
      this.count('client retries');
      await sleep(Math.min(3000, 250 * 2 ** Math.min(attempt, 4)) + this.rnd.int(0, 250));
    }
  }

  /** Records a 2xx answer for a business id; every answer for one id must name the same object. */
  private acknowledge(a: Omit<Ack, 'answers'>) {
    const key = `${a.kind}|${a.accountId}|${a.externalId}`;
    const seen = this.acks.get(key);
    if (!seen) {
      this.acks.set(key, { ...a, answers: 1 });
      return;
    }
    seen.answers++;
    if (seen.id !== a.id)
      this.violation(`${a.kind} ${a.externalId}: two answers name different objects ${seen.id} and ${a.id}`);
  }

  /**
   * Acknowledges each 2xx answer of one request (racing answers are two) and counts the refusals;
   * returns a 2xx answer, if any.
   */
  private accept(
    answers: HttpStat[],
    what: string,
    ack: (answer: HttpStat) => Omit<Ack, 'answers'>,
  ): HttpStat | undefined {
    let accepted: HttpStat | undefined;
    for (const a of answers) {
      if (is2xx(a)) {
        accepted = a;
        this.acknowledge(ack(a));
      } else this.count(`${what} refused ${a.status} ${a.body?.error ?? ''}`.trim());
    }
    return accepted;
  }

  private nextId(prefix: string) {
    return `${prefix}-${this.runId}-${++this.seq}`;
  }

  /** Sends once, or twice at once to two different API processes (a racing retry). */
  private async send(account: Account, path: string, body: unknown, retries = 8): Promise<HttpStat[]> {
    const n = this.target.apiUrls.length;
    if (n > 1 && this.rnd.chance(this.plan.racing ?? 0.2)) {
      this.count('racing pairs');
      const first = this.rnd.int(0, n - 1);
      return Promise.all([
        this.request(account, 'POST', path, body, { api: first, retries }),
        this.request(account, 'POST', path, body, { api: (first + 1) % n, retries }),
      ]);
    }
    return [await this.request(account, 'POST', path, body, { retries })];
  }

  /** Later, the same request again (a retry after a lost answer), to any API process. */
  private later(fn: () => Promise<unknown>, ms: number) {
    const p = sleep(ms)
      .then(fn)
      .catch((err) => this.violation(`background step failed: ${String(err)}`));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private async payCheckout(checkoutUrl: string, what: string) {
    for (let attempt = 0; attempt < 40; attempt++) {
      try {
        const res = await fetch(`${checkoutUrl}/pay`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: '',
          signal: AbortSignal.timeout(15_000),
        });
        const text = await res.text();
        if (res.status === 200 && text.includes('Payment received')) {
          this.count('checkouts paid');
          return;
        }
      } catch {
        // the API process may be down or restarting: the payer clicks again
      }
      await sleep(1000);
    }
    this.violation(`could not pay the checkout of ${what}`);
  }

  private async orderOp(kind: 'balance' | 'intent' | 'direct') {
    const account = this.rnd.pick(this.accounts);
    const externalOrderId = this.nextId(kind);
    const productId = kind === 'direct' ? this.rnd.pick([PRODUCTS.giftPartial, PRODUCTS.giftFlaky]) : PRODUCTS.plus;
    const body: Record<string, unknown> = {
      externalOrderId,
      productId,
      qty: kind === 'direct' ? this.rnd.int(1, 3) : this.rnd.int(1, 2),
    };
    if (kind === 'intent') body.payment = 'intent';
    const fate = kind === 'intent' ? this.rnd.pick(['pay', 'pay', 'late', 'expire'] as const) : undefined;
    const answers = await this.send(account, '/orders', body);
    const ack = this.accept(answers, 'orders', (a) => ({
      kind: 'order',
      accountId: account.accountId,
      externalId: externalOrderId,
      id: a.body.orderId,
      payment: kind === 'intent' ? 'intent' : 'balance',
      fate,
      checkoutUrl: a.body.checkoutUrl,
    }));
    if (!ack) return;
    this.count(`orders acknowledged (${kind})`);
    if (this.rnd.chance(this.plan.duplicate ?? 0.15)) {
      this.later(
        async () => {
          const again = await this.request(account, 'POST', '/orders', body);
          if (is2xx(again)) {
            this.acknowledge({
              kind: 'order',
              accountId: account.accountId,
              externalId: externalOrderId,
              id: again.body.orderId,
            });
            this.count('duplicate retries answered');
          }
        },
        this.rnd.int(200, 3000),
      );
    }
    if (kind === 'intent' && ack.body.checkoutUrl && fate !== 'expire') {
      const delay =
        fate === 'pay' ? this.rnd.int(0, 1500) : (this.target.paymentWindowSeconds + 1) * 1000 + this.rnd.int(0, 2000);
      const url = ack.body.checkoutUrl as string;
      this.later(() => this.payCheckout(url, `order ${ack.body.orderId}`), delay);
    }
  }

  private async topupOp() {
    // The quota (20/hour) and the unpaid limit (5) per account: stay under both.
    const candidates = this.accounts.filter((a) => a.topups < 12);
    if (!candidates.length) return this.orderOp('balance');
    const account = this.rnd.pick(candidates);
    account.topups++;
    const externalTopupId = this.nextId('top');
    const body = { externalTopupId, amount: `${this.rnd.int(5, 50)}.00`, currency: this.rnd.pick(['USDT', 'USDC']) };
    const fate = this.rnd.chance(0.75) ? 'pay' : 'expire';
    const answers = await this.send(account, '/topup', body);
    account.topups += answers.length - 1;
    const ack = this.accept(answers, 'topups', (a) => ({
      kind: 'topup',
      accountId: account.accountId,
      externalId: externalTopupId,
      id: a.body.orderId,
      fate,
      checkoutUrl: a.body.checkoutUrl,
    }));
    if (!ack) return;
    this.count('topups acknowledged');
    if (fate === 'pay' && ack.body.checkoutUrl) {
      const url = ack.body.checkoutUrl as string;
      this.later(() => this.payCheckout(url, `top-up ${ack.body.orderId}`), this.rnd.int(0, 2000));
    }
  }

  private async redemptionOp() {
    const account = this.rnd.pick(this.accounts);
    const externalOrderId = this.nextId('team');
    const bought = await this.request(account, 'POST', '/orders', {
      externalOrderId,
      productId: PRODUCTS.team,
      qty: 1,
    });
    if (bought.status !== 200)
      return void this.count(`orders refused ${bought.status} ${bought.body?.error ?? ''}`.trim());
    this.acknowledge({
      kind: 'order',
      accountId: account.accountId,
      externalId: externalOrderId,
      id: bought.body.orderId,
      payment: 'balance',
    });
    this.count('orders acknowledged (redemption code)');
    const code = bought.body.codes?.[0];
    if (!code) return;
    const answers = await this.send(account, '/redemptions', { code, redeemInfo: TEAM_INFO });
    const ack = this.accept(answers, 'redemptions', (a) => ({
      kind: 'redemption',
      accountId: account.accountId,
      externalId: code,
      id: a.body.redemptionId,
    }));
    if (ack) this.count('redemptions acknowledged');
  }

  private pickOp(): Op {
    const mix = { balanceOrder: 4, intentOrder: 3, topup: 2, directCode: 2, redemption: 1, ...this.plan.mix };
    const total = Object.values(mix).reduce((a, b) => a + b, 0);
    let r = this.rnd.next() * total;
    for (const [op, w] of Object.entries(mix) as [Op, number][]) {
      if ((r -= w) < 0) return op;
    }
    return 'balanceOrder';
  }

  async runOp(op: Op): Promise<void> {
    this.count(`ops ${op}`);
    if (op === 'balanceOrder') return this.orderOp('balance');
    if (op === 'intentOrder') return this.orderOp('intent');
    if (op === 'directCode') return this.orderOp('direct');
    if (op === 'topup') return this.topupOp();
    return this.redemptionOp();
  }

  /** The traffic: `concurrency` clients issuing operations until the duration or count is reached. */
  async run(): Promise<void> {
    this.deadlines.start();
    const until = Date.now() + this.plan.durationMs;
    let issued = 0;
    const started = Date.now();
    let lastLog = started;
    await Promise.all(
      Array.from({ length: this.plan.concurrency }, async () => {
        while (!this.stopRequested && Date.now() < until && issued < this.plan.maxOps) {
          issued++;
          const op = this.pickOp();
          try {
            await this.runOp(op);
          } catch (err) {
            this.violation(`operation ${op} threw: ${String(err)}`);
          }
          if (Date.now() - lastLog > 15_000) {
            lastLog = Date.now();
            this.log(`soak: ${issued} operations in ${Math.round((Date.now() - started) / 1000)} s`);
          }
        }
      }),
    );
    this.counts.operations = issued;
  }

  /** Waits for the background steps (late payments, duplicate retries). */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private async temporalClient() {
    if (!this.temporal) {
      const connection = await Connection.connect({ address: this.target.temporalAddress });
      const client = new TemporalClient({
        connection,
        namespace: this.target.namespace ?? 'default',
        dataConverter: dataConverter(parseKeyRing(this.target.payloadKeys)),
      });
      this.temporal = { client, connection };
    }
    return this.temporal.client;
  }

  private pg<T>(fn: (c: PgClient) => Promise<T>): Promise<T> {
    return withPg(this.target.databaseUrl, fn);
  }

  /** The soak's workflows as Temporal lists them: id, run, status. */
  async workflows(): Promise<ListedWorkflow[]> {
    const client = await this.temporalClient();
    const ids = await this.subjectIds();
    const out: ListedWorkflow[] = [];
    const since = this.startedAt.toISOString();
    for await (const wf of client.workflow.list({ query: `StartTime >= "${since}"` })) {
      if (ids.has(subjectOf(wf.workflowId)))
        out.push({ workflowId: wf.workflowId, runId: wf.runId, status: wf.status.name, type: wf.type });
    }
    return out;
  }

  /** Ids that tie a workflow to this soak: its accounts, orders, redemptions, deliveries. */
  private async subjectIds(): Promise<Set<string>> {
    const accounts = this.accounts.map((a) => a.accountId);
    return this.pg(async (c) => {
      const ids = new Set<string>(accounts);
      for (const q of [
        'select id from orders where account_id = any($1)',
        'select id from redemptions where account_id = any($1)',
        'select id from webhook_deliveries where account_id = any($1)',
      ]) {
        for (const r of (await c.query(q, [accounts])).rows) ids.add(r.id);
      }
      return ids;
    });
  }

  /**
   * Waits until every workflow of the soak is closed, or waits on something it should wait on
   * (a procurement in needs_attention waits for support). Returns the running ones left.
   */
  async drain(timeoutMs: number): Promise<string[]> {
    await this.settle();
    const deadline = Date.now() + timeoutMs;
    let running: string[] = [];
    for (;;) {
      try {
        const attention = await this.pg(
          async (c) =>
            new Set(
              (
                await c.query(
                  `select id from orders where fulfillment_status = 'needs_attention' and account_id = any($1)`,
                  [this.accounts.map((a) => a.accountId)],
                )
              ).rows.map((r) => `procure:${r.id}`),
            ),
        );
        const outbox = await this.pg(async (c) =>
          Number(
            (
              await c.query(`select count(*) from events where dispatched_at is null and account_id = any($1)`, [
                this.accounts.map((a) => a.accountId),
              ])
            ).rows[0].count,
          ),
        );
        running = (await this.workflows())
          .filter((w) => w.status === 'RUNNING' && !attention.has(w.workflowId))
          .map((w) => w.workflowId);
        if (running.length === 0 && outbox === 0) return [];
      } catch (err) {
        this.log(`drain: ${String(err)}`);
      }
      if (Date.now() > deadline) return running;
      await sleep(2000);
    }
  }

  /**
   * Every invariant, from Postgres, the API and Temporal, and the deadlines sampled while it ran.
   * `strict`: every workflow must be closed.
   */
  async check(opts: { strict?: boolean; faults?: string[] } = {}): Promise<Report> {
    const findings: Findings = { violations: [...this.violations], counts: { ...this.counts } };
    const db = await this.pg((c) =>
      readSnapshot(
        c,
        this.accounts.map((a) => a.accountId),
      ),
    );
    const record = {
      accounts: this.accounts,
      acks: [...this.acks.values()],
      received: this.receivers.received,
      webhooks: this.plan.webhooks !== false,
      webhookMaxAttempts: this.target.webhookMaxAttempts,
      strict: !!opts.strict,
    };
    checkStoredState(db, record, findings);
    await this.deadlines.stop();
    await this.deadlines.check(findings);
    await checkApiReadback(
      db,
      record,
      (account, path) => this.request(account, 'GET', path, undefined, { retries: 10 }),
      findings,
    );
    const client = await this.temporalClient();
    const workflows = await checkWorkflows(
      db,
      await this.workflows(),
      async (w) => {
        const desc = await client.workflow
          .getHandle(w.workflowId, w.runId)
          .describe()
          .catch(() => undefined);
        return desc?.raw.pendingActivities ?? [];
      },
      record.strict,
      findings,
    );
    const report = soakReport({ seed: this.plan.seed, findings, http: this.http, workflows, faults: opts.faults });
    const stuck = await this.explainStuck(db, findings.violations).catch((err) => [
      `(histories unavailable: ${String(err)})`,
    ]);
    if (stuck.length) report.text += `\n\nwhat Temporal recorded for the orders left pending:\n${stuck.join('\n')}`;
    return report;
  }

  /**
   * For each order left pending, every run of its workflow and the events of each: what a failed
   * run needs to be understood afterwards (CI keeps only the output).
   */
  private async explainStuck(db: Snapshot, violations: string[]): Promise<string[]> {
    const client = await this.temporalClient();
    const lines: string[] = [];
    for (const v of violations) {
      const id = /^order (\S+) still pending after the drain$/.exec(v)?.[1];
      const o = id && db.orders.find((x) => x.id === id);
      if (!o) continue;
      // The keys the service starts them under (topupStarter's key: the externalTopupId, else the order id).
      const workflowId =
        o.kind === 'topup'
          ? topupWorkflowId(o.account_id, o.external_topup_id ?? o.id)
          : orderWorkflowId(o.account_id, o.external_order_id);
      lines.push(`  ${id} (${o.kind}/${o.payment}): workflow ${workflowId}`);
      for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
        lines.push(`    run ${run.runId} ${run.status.name} started ${run.startTime.toISOString()}`);
        const { events } = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
        for (const e of events ?? []) lines.push(`      ${describeEvent(e)}`);
      }
    }
    return lines;
  }

  async close(): Promise<void> {
    this.stopRequested = true;
    await this.deadlines.stop();
    await this.receivers.close().catch(() => undefined);
    await this.temporal?.connection.close().catch(() => undefined);
  }
}

/** The business id inside a workflow id (order:<account>:<ext> → account; procure:<order> → order, ...). */
function subjectOf(workflowId: string): string {
  const [kind, a] = workflowId.split(':');
  if (kind === 'order' || kind === 'topup' || kind === 'procure' || kind === 'delivery' || kind === 'redemption')
    return a;
  return workflowId;
}

/** One history event on a line: its id, time, type and what tells it apart (no payloads). */
function describeEvent(e: temporal.api.history.v1.IHistoryEvent): string {
  const type = temporal.api.enums.v1.EventType[e.eventType ?? 0]?.replace(/^EVENT_TYPE_/, '') ?? String(e.eventType);
  const at = e.eventTime?.seconds
    ? new Date(Number(e.eventTime.seconds) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6))
        .toISOString()
        .slice(11, 23)
    : '';
  const detail = [
    e.markerRecordedEventAttributes?.markerName,
    e.activityTaskScheduledEventAttributes?.activityType?.name,
    e.timerStartedEventAttributes &&
      `timer ${Number(e.timerStartedEventAttributes.startToFireTimeout?.seconds ?? 0)} s`,
    e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId,
    e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId,
    e.workflowTaskFailedEventAttributes &&
      `${e.workflowTaskFailedEventAttributes.cause} ${e.workflowTaskFailedEventAttributes.failure?.message ?? ''}`,
    e.workflowTaskTimedOutEventAttributes && 'timed out',
    e.workflowExecutionSignaledEventAttributes?.signalName,
    e.activityTaskFailedEventAttributes?.failure?.message,
  ]
    .filter(Boolean)
    .join(' ');
  return `${e.eventId} ${at} ${type}${detail ? ` ${detail}` : ''}`;
}
