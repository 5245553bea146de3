// The mixed-traffic soak and its invariant checker (issue 15, item 2). Used by bench/soak.ts and by
// the fault tests in this directory. It talks to the service only the way clients do (HTTP to any
// of the API processes, the hosted checkout's Pay button, webhook receivers), creates its accounts
// through the operators' services (as `npx wholesale accounts create` / `balance adjust` do), and
// checks at the end from Postgres, from the API and from Temporal's visibility.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Client as PgClient } from 'pg';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config';
import { initOrm } from '../../src/db/orm';
import { createAccount } from '../../src/services/accounts';
import { adjustBalance } from '../../src/services/admin';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';

export const PRODUCTS = {
  /** Redemption code, on demand: balance and intent orders. */
  plus: 'prod_chatgpt_plus_1m',
  /** Redemption code with account_id + email: bought, then redeemed. */
  team: 'prod_chatgpt_team_1m',
  /** Direct-code gift cards, procured from the (scripted) sandbox supplier. */
  giftPartial: 'prod_apple_gift_card_us_10',
  giftFlaky: 'prod_roblox_gift_card_us_10',
} as const;

/** The supplier script the workers run with: partial rounds and transient failures. */
export const SOAK_SUPPLIER_SCRIPT = JSON.stringify({
  [PRODUCTS.giftPartial]: { steps: [1, 'transient', 1, 0], then: 'all', delayMs: 200 },
  [PRODUCTS.giftFlaky]: { steps: ['transient', 'transient', 1], then: 'all', delayMs: 100 },
});

/** Service settings that make the soak's workflows run their whole course in seconds. */
export const SOAK_SERVICE_ENV: Record<string, string> = {
  PAYMENT_WINDOW_SECONDS: '8',
  PAYMENT_SYNC_SECONDS: '1',
  LATE_PAYMENT_WATCH_SECONDS: '12',
  LATE_PAYMENT_POLL_SECONDS: '1',
  PAYMENT_PROVIDER_TIMEOUT_MS: '3000',
  // A placement waits at most this long (no worker, Temporal down: a retryable 503), and an order
  // or top-up workflow left without its placement update looks its order up after this long.
  PLACEMENT_TIMEOUT_MS: '6000',
  PLACEMENT_RECOVERY_SECONDS: '5',
  WEBHOOK_TIMEOUT_MS: '1500',
  WEBHOOK_RETRY_BASE_SECONDS: '1',
  WEBHOOK_RETRY_CAP_SECONDS: '2',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_ALLOW_INSECURE_URLS: 'true',
  PROCUREMENT_RETRY_BASE_SECONDS: '1',
  PROCUREMENT_RETRY_CAP_SECONDS: '2',
  PROCUREMENT_MAX_ROUNDS: '12',
  PROCUREMENT_DEADLINE_SECONDS: '600',
  REDEMPTION_REFRESH_SECONDS: '1',
  SANDBOX_SUPPLIER_SCRIPT: SOAK_SUPPLIER_SCRIPT,
};

const TEAM_INFO = { account_id: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', email: 'jane@example.com' };

export type Op = 'balanceOrder' | 'intentOrder' | 'topup' | 'directCode' | 'redemption';
export type HookMode = 'ok' | 'fail' | 'hang' | 'redirect';

export interface SoakTarget {
  apiUrls: string[];
  databaseUrl: string;
  temporalAddress: string;
  namespace?: string;
  payloadKeys: string;
  /** The service's payment window and late-payment watch (to time late payments). */
  paymentWindowSeconds: number;
  lateWatchSeconds: number;
  webhookMaxAttempts: number;
}

export interface SoakPlan {
  seed: number;
  /** Stop issuing operations after this long... */
  durationMs: number;
  /** ...or after this many operations, whichever comes first. */
  maxOps: number;
  accounts: number;
  concurrency: number;
  /** Funding of each account (Decimal). */
  funding?: string;
  mix?: Partial<Record<Op, number>>;
  /** Share of operations sent twice at once to two API processes. */
  racing?: number;
  /** Share of acknowledged operations resent later (a client retry after a lost answer). */
  duplicate?: number;
  /** Webhook receivers by account, cycled. */
  hookModes?: HookMode[];
  /** Configure a webhook receiver for each account (default true; one PUT /webhook per key). */
  webhooks?: boolean;
  /** Per-request deadline on the client side: a request slower than this is a hang. */
  requestTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface Account {
  accountId: string;
  apiKey: string;
  hook: HookMode;
  topups: number;
}

interface Ack {
  kind: 'order' | 'topup' | 'redemption';
  accountId: string;
  externalId: string;
  id: string;
  payment?: 'balance' | 'intent';
  fate?: 'pay' | 'late' | 'expire';
  checkoutUrl?: string | null;
  answers: number;
}

interface Received {
  mode: HookMode | 'redirected';
  eventIdHeader?: string;
  deliveryIdHeader?: string;
  bodyEventId?: string;
  status: number | 'hang';
}

export interface HttpStat {
  status: number | 'timeout' | 'network';
  ms: number;
  path: string;
  api: number;
  at: number;
  body?: any;
  retryAfter?: string;
}

/** A seeded PRNG (mulberry32): the same seed gives the same operations in the same order. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
    chance: (p: number) => next() < p,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Webhook receivers that answer 200, 500, hang or redirect, recording every request. */
export class HookReceivers {
  readonly received: Received[] = [];
  private server!: Server;
  private sockets = new Set<Socket>();
  private hanging = new Set<ServerResponse>();
  base = '';

  async start(): Promise<this> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '';
        const mode = (path.startsWith('/redirected') ? 'redirected' : path.split('/')[2]) as Received['mode'];
        let bodyEventId: string | undefined;
        try {
          bodyEventId = JSON.parse(Buffer.concat(chunks).toString('utf8')).eventId;
        } catch {
          bodyEventId = undefined;
        }
        const rec: Received = {
          mode,
          eventIdHeader: req.headers['x-wholesale-event-id'] as string | undefined,
          deliveryIdHeader: req.headers['x-wholesale-delivery-id'] as string | undefined,
          bodyEventId,
          status: mode === 'ok' || mode === 'redirected' ? 200 : mode === 'fail' ? 500 : mode === 'redirect' ? 302 : 'hang',
        };
        this.received.push(rec);
        if (rec.status === 'hang') return void this.hanging.add(res);
        if (rec.status === 302) res.setHeader('location', '/redirected');
        res.statusCode = rec.status;
        res.end(rec.status === 200 ? 'ok' : '');
      });
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  url(mode: HookMode, accountId: string): string {
    return `${this.base}/hook/${mode}/${accountId}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

export interface Report {
  seed: number;
  counts: Record<string, number | string>;
  statuses: Record<string, number>;
  violations: string[];
  /** Workflows by status; running ones that are legitimately waiting, by reason. */
  workflows: Record<string, number>;
  text: string;
}

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
  stopRequested = false;

  constructor(readonly target: SoakTarget, readonly plan: SoakPlan) {
    this.rnd = prng(plan.seed);
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
        await adjustBalance(em, { accountId: created.accountId, amount: this.plan.funding ?? '2000.00', note: 'soak funding', levelThresholds: thresholds });
        const account: Account = { ...created, hook: modes[i % modes.length], topups: 0 };
        if (this.plan.webhooks !== false) {
          const put = await this.request(account, 'PUT', '/webhook', { url: this.receivers.url(account.hook, account.accountId) }, { retries: 10 });
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
  async request(account: Account, method: string, path: string, body?: unknown, opts: { api?: number; retries?: number } = {}): Promise<HttpStat> {
    let attempt = 0;
    for (;;) {
      const api = opts.api ?? this.rnd.int(0, this.target.apiUrls.length - 1);
      const t0 = Date.now();
      let stat: HttpStat;
      try {
        const res = await fetch(`${this.target.apiUrls[api]}${path}`, {
          method,
          headers: { authorization: `Bearer ${account.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
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
        stat = { status: res.status, ms: Date.now() - t0, path, api, at: t0, body: parsed, retryAfter: res.headers.get('retry-after') ?? undefined };
      } catch (err) {
        const name = (err as Error).name;
        stat = { status: name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'network', ms: Date.now() - t0, path, api, at: t0 };
      }
      this.http.push({ ...stat, body: undefined });
      this.count(`http ${stat.status}`);
      if (stat.status === 'timeout') this.violation(`${method} ${path} on api-${api}: no answer within ${this.plan.requestTimeoutMs ?? 30_000} ms`);
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
    if (seen.id !== a.id) this.violation(`${a.kind} ${a.externalId}: two answers name different objects ${seen.id} and ${a.id}`);
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
    const p = sleep(ms).then(fn).catch((err) => this.violation(`background step failed: ${String(err)}`));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private async payCheckout(checkoutUrl: string, what: string) {
    for (let attempt = 0; attempt < 40; attempt++) {
      try {
        const res = await fetch(`${checkoutUrl}/pay`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '', signal: AbortSignal.timeout(15_000) });
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
    const body: Record<string, unknown> = { externalOrderId, productId, qty: kind === 'direct' ? this.rnd.int(1, 3) : this.rnd.int(1, 2) };
    if (kind === 'intent') body.payment = 'intent';
    const fate = kind === 'intent' ? this.rnd.pick(['pay', 'pay', 'late', 'expire'] as const) : undefined;
    const answers = await this.send(account, '/orders', body);
    let ack: HttpStat | undefined;
    for (const a of answers) {
      if (typeof a.status === 'number' && a.status >= 200 && a.status < 300) {
        ack = a;
        this.acknowledge({ kind: 'order', accountId: account.accountId, externalId: externalOrderId, id: a.body.orderId, payment: kind === 'intent' ? 'intent' : 'balance', fate, checkoutUrl: a.body.checkoutUrl });
      } else this.count(`orders refused ${a.status} ${a.body?.error ?? ''}`.trim());
    }
    if (!ack) return;
    this.count(`orders acknowledged (${kind})`);
    if (this.rnd.chance(this.plan.duplicate ?? 0.15)) {
      this.later(async () => {
        const again = await this.request(account, 'POST', '/orders', body);
        if (typeof again.status === 'number' && again.status >= 200 && again.status < 300) {
          this.acknowledge({ kind: 'order', accountId: account.accountId, externalId: externalOrderId, id: again.body.orderId });
          this.count('duplicate retries answered');
        }
      }, this.rnd.int(200, 3000));
    }
    if (kind === 'intent' && ack.body.checkoutUrl && fate !== 'expire') {
      const delay = fate === 'pay' ? this.rnd.int(0, 1500) : (this.target.paymentWindowSeconds + 1) * 1000 + this.rnd.int(0, 2000);
      const url = ack.body.checkoutUrl as string;
      this.later(() => this.payCheckout(url, `order ${ack!.body.orderId}`), delay);
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
    let ack: HttpStat | undefined;
    for (const a of answers) {
      if (typeof a.status === 'number' && a.status >= 200 && a.status < 300) {
        ack = a;
        this.acknowledge({ kind: 'topup', accountId: account.accountId, externalId: externalTopupId, id: a.body.orderId, fate, checkoutUrl: a.body.checkoutUrl });
      } else this.count(`topups refused ${a.status} ${a.body?.error ?? ''}`.trim());
    }
    if (!ack) return;
    this.count('topups acknowledged');
    if (fate === 'pay' && ack.body.checkoutUrl) {
      const url = ack.body.checkoutUrl as string;
      this.later(() => this.payCheckout(url, `top-up ${ack!.body.orderId}`), this.rnd.int(0, 2000));
    }
  }

  private async redemptionOp() {
    const account = this.rnd.pick(this.accounts);
    const externalOrderId = this.nextId('team');
    const bought = await this.request(account, 'POST', '/orders', { externalOrderId, productId: PRODUCTS.team, qty: 1 });
    if (bought.status !== 200) return void this.count(`orders refused ${bought.status} ${bought.body?.error ?? ''}`.trim());
    this.acknowledge({ kind: 'order', accountId: account.accountId, externalId: externalOrderId, id: bought.body.orderId, payment: 'balance' });
    this.count('orders acknowledged (redemption code)');
    const code = bought.body.codes?.[0];
    if (!code) return;
    const answers = await this.send(account, '/redemptions', { code, redeemInfo: TEAM_INFO });
    for (const a of answers) {
      if (a.status === 200) {
        this.acknowledge({ kind: 'redemption', accountId: account.accountId, externalId: code, id: a.body.redemptionId });
      } else this.count(`redemptions refused ${a.status} ${a.body?.error ?? ''}`.trim());
    }
    if (answers.some((a) => a.status === 200)) this.count('redemptions acknowledged');
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
      const client = new TemporalClient({ connection, namespace: this.target.namespace ?? 'default', dataConverter: dataConverter(parseKeyRing(this.target.payloadKeys)) });
      this.temporal = { client, connection };
    }
    return this.temporal.client;
  }

  private async pg<T>(fn: (c: PgClient) => Promise<T>): Promise<T> {
    const c = new PgClient({ connectionString: this.target.databaseUrl });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  }

  /** The soak's workflows as Temporal lists them: id, run, status. */
  async workflows(): Promise<{ workflowId: string; runId: string; status: string; type: string }[]> {
    const client = await this.temporalClient();
    const ids = await this.subjectIds();
    const out: { workflowId: string; runId: string; status: string; type: string }[] = [];
    const since = this.startedAt.toISOString();
    for await (const wf of client.workflow.list({ query: `StartTime >= "${since}"` })) {
      if (ids.has(subjectOf(wf.workflowId))) out.push({ workflowId: wf.workflowId, runId: wf.runId, status: wf.status.name, type: wf.type });
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
        const attention = await this.pg(async (c) => new Set((await c.query(`select id from orders where fulfillment_status = 'needs_attention' and account_id = any($1)`, [this.accounts.map((a) => a.accountId)])).rows.map((r) => `procure:${r.id}`)));
        const outbox = await this.pg(async (c) => Number((await c.query(`select count(*) from events where dispatched_at is null and account_id = any($1)`, [this.accounts.map((a) => a.accountId)])).rows[0].count));
        running = (await this.workflows()).filter((w) => w.status === 'RUNNING' && !attention.has(w.workflowId)).map((w) => w.workflowId);
        if (running.length === 0 && outbox === 0) return [];
      } catch (err) {
        this.log(`drain: ${String(err)}`);
      }
      if (Date.now() > deadline) return running;
      await sleep(2000);
    }
  }

  /** Every invariant, from Postgres, the API and Temporal. `strict`: every workflow must be closed. */
  async check(opts: { strict?: boolean; faults?: string[] } = {}): Promise<Report> {
    const v = [...this.violations];
    const accounts = this.accounts.map((a) => a.accountId);
    const counts: Record<string, number | string> = { ...this.counts };
    const db = await this.pg(async (c) => ({
      accounts: (await c.query('select id, balance from accounts where id = any($1)', [accounts])).rows,
      ledger: (await c.query('select account_id, type, amount, balance_after, order_id from ledger_transactions where account_id = any($1) order by account_id, id', [accounts])).rows,
      orders: (await c.query(`select id, account_id, kind, external_order_id, external_topup_id, payment, status, amount, qty, delivery_type, fulfillment_status, fulfilled_quantity, checkout_id from orders where account_id = any($1)`, [accounts])).rows,
      checkouts: (await c.query(`select s.id, s.status from sandbox_checkouts s join orders o on o.checkout_id = s.id where o.account_id = any($1)`, [accounts])).rows,
      codes: (await c.query('select code, order_id, voided from issued_codes where account_id = any($1)', [accounts])).rows,
      dupCodes: (await c.query('select code, count(*) as n from issued_codes group by code having count(*) > 1')).rows,
      supplier: (await c.query(`select idempotency_key, requested, codes from sandbox_supplier_orders`)).rows,
      events: (await c.query(`select e.id, e.account_id, e.type, e.dispatched_at, d.id as delivery_id, d.status as delivery_status, d.attempts, d.next_attempt_at
                                from events e left join webhook_deliveries d on d.event_id = e.id where e.account_id = any($1)`, [accounts])).rows,
      redemptions: (await c.query('select id, status from redemptions where account_id = any($1)', [accounts])).rows,
    }));
    const cents = (s: string | number) => Math.round(Number(s) * 100);

    // Money: every ledger sums to its balance, the balanceAfter chain is unbroken, never below zero.
    const ledgerBy = groupBy(db.ledger, (r) => r.account_id);
    for (const a of db.accounts) {
      const rows = ledgerBy.get(a.id) ?? [];
      let running = 0;
      for (const [i, r] of rows.entries()) {
        running += cents(r.amount);
        if (running !== cents(r.balance_after)) {
          v.push(`account ${a.id}: balanceAfter chain broken at ledger row ${i} (${r.type} ${r.amount}: running ${running / 100}, balanceAfter ${r.balance_after})`);
          break;
        }
        if (cents(r.balance_after) < 0) v.push(`account ${a.id}: balance below zero (${r.balance_after}) after ${r.type}`);
      }
      if (running !== cents(a.balance)) v.push(`account ${a.id}: ledger sums to ${running / 100}, balance is ${a.balance}`);
      if (cents(a.balance) < 0) v.push(`account ${a.id}: balance ${a.balance} below zero`);
    }
    counts['ledger rows'] = db.ledger.length;

    // Orders: each acknowledged id exists exactly once, with its debit.
    const ordersById = new Map(db.orders.map((o) => [o.id, o]));
    const ledgerByOrder = groupBy(db.ledger.filter((r) => r.order_id), (r) => r.order_id as string);
    const checkoutPaid = new Map(db.checkouts.map((c) => [c.id, c.status === 'paid']));
    let acked = 0;
    for (const ack of this.acks.values()) {
      if (ack.kind === 'redemption') continue;
      acked++;
      const matching = db.orders.filter((o) => o.account_id === ack.accountId && (ack.kind === 'topup' ? o.external_topup_id : o.external_order_id) === ack.externalId);
      if (matching.length !== 1) {
        v.push(`acknowledged ${ack.kind} ${ack.externalId} (${ack.id}): ${matching.length} rows in Postgres`);
        continue;
      }
      if (matching[0].id !== ack.id) v.push(`acknowledged ${ack.kind} ${ack.externalId}: answered ${ack.id}, Postgres holds ${matching[0].id}`);
    }
    counts['acknowledged orders and top-ups'] = acked;
    counts['acknowledged answers (incl. racing and duplicate)'] = [...this.acks.values()].reduce((n, a) => n + a.answers, 0);
    for (const o of db.orders) {
      const rows = ledgerByOrder.get(o.id) ?? [];
      const by = (t: string) => rows.filter((r) => r.type === t);
      const paid = o.checkout_id ? checkoutPaid.get(o.checkout_id) === true : false;
      if (o.kind === 'purchase' && o.payment === 'balance') {
        const debits = by('purchase');
        if (debits.length !== 1 || cents(debits[0].amount) !== -cents(o.amount)) v.push(`order ${o.id} (balance): ${debits.length} debit rows ${debits.map((d) => d.amount).join(',')} for amount ${o.amount}`);
        const refunded = by('refund').reduce((n, r) => n + cents(r.amount), 0);
        if (refunded > cents(o.amount)) v.push(`order ${o.id}: refunded ${refunded / 100} > amount ${o.amount}`);
      } else if (o.kind === 'purchase') {
        if (by('purchase').length) v.push(`order ${o.id} (intent): a balance debit`);
        if (paid && !['paid', 'delivered', 'refunded'].includes(o.status)) v.push(`order ${o.id} (intent): checkout paid, order ${o.status}`);
        if (!paid && !['pending', 'expired'].includes(o.status)) v.push(`order ${o.id} (intent): checkout not paid, order ${o.status}`);
      } else {
        const credits = by('topup');
        if (paid && (credits.length !== 1 || cents(credits[0].amount) !== cents(o.amount))) v.push(`top-up ${o.id}: paid, ${credits.length} credit rows`);
        if (!paid && credits.length) v.push(`top-up ${o.id}: not paid, ${credits.length} credit rows`);
        if (paid !== (o.status === 'delivered')) v.push(`top-up ${o.id}: checkout ${paid ? 'paid' : 'unpaid'}, status ${o.status}`);
      }
      if (opts.strict && o.status === 'pending') v.push(`order ${o.id} still pending after the drain`);
    }
    counts['orders in Postgres'] = db.orders.length;
    for (const [k, n] of Object.entries(countBy(db.orders, (o) => `${o.kind}/${o.payment}/${o.status}${o.fulfillment_status ? `/${o.fulfillment_status}` : ''}`))) counts[`orders ${k}`] = n;
    counts['checkouts paid (Postgres)'] = db.checkouts.filter((c) => c.status === 'paid').length;

    // Codes: none issued twice; a delivered order holds exactly its quantity.
    if (db.dupCodes.length) v.push(`codes issued twice: ${db.dupCodes.map((d) => d.code.slice(0, 6) + '…').join(', ')}`);
    const codesByOrder = groupBy(db.codes.filter((c) => !c.voided), (c) => c.order_id);
    for (const o of db.orders.filter((x) => x.kind === 'purchase' && x.status === 'delivered')) {
      const n = codesByOrder.get(o.id)?.length ?? 0;
      if (n !== o.qty) v.push(`order ${o.id} delivered with ${n} codes for qty ${o.qty}`);
    }
    counts['codes issued'] = db.codes.length;

    // Supplier: each purchase once; what it sold is exactly what the orders hold.
    const supplierCodes = new Map<string, string>();
    for (const s of db.supplier) {
      for (const code of s.codes as string[]) {
        if (supplierCodes.has(code)) v.push(`supplier code sold twice (${supplierCodes.get(code)} and ${s.idempotency_key})`);
        supplierCodes.set(code, s.idempotency_key);
      }
    }
    for (const o of db.orders.filter((x) => x.delivery_type === 'direct_code' && x.kind === 'purchase')) {
      const sold = db.supplier.filter((s) => String(s.idempotency_key).startsWith(`${o.id}:`)).flatMap((s) => s.codes as string[]);
      if (sold.length !== o.fulfilled_quantity) v.push(`order ${o.id}: supplier sold ${sold.length} units, fulfilledQuantity ${o.fulfilled_quantity}`);
      if (sold.length > o.qty) v.push(`order ${o.id}: supplier sold ${sold.length} units for qty ${o.qty}`);
      const held = new Set((codesByOrder.get(o.id) ?? []).map((c) => c.code));
      if (o.status === 'delivered' && (sold.length !== held.size || sold.some((c) => !held.has(c)))) v.push(`order ${o.id}: delivered codes differ from the supplier's sale`);
    }
    counts['supplier purchases'] = db.supplier.filter((s) => db.orders.some((o) => String(s.idempotency_key).startsWith(`${o.id}:`))).length;

    // Redemptions: each acknowledged one exists; every answer for a code named the same one.
    const redemptionIds = new Map(db.redemptions.map((r) => [r.id, r.status]));
    for (const ack of [...this.acks.values()].filter((a) => a.kind === 'redemption')) {
      if (!redemptionIds.has(ack.id)) v.push(`acknowledged redemption ${ack.id} missing in Postgres`);
      else if (opts.strict && !['fulfilled', 'failed'].includes(redemptionIds.get(ack.id)!)) v.push(`redemption ${ack.id} still ${redemptionIds.get(ack.id)} after the drain`);
    }
    for (const [k, n] of Object.entries(countBy(db.redemptions, (r) => r.status))) counts[`redemptions ${k}`] = n;

    // Webhooks: every event has one delivery, delivered (200 receivers) or failed/in backoff, and
    // every request carried the event's own id.
    const hookOf = new Map(this.accounts.map((a) => [a.accountId, a.hook]));
    if (this.plan.webhooks === false) db.events = db.events.filter((e) => e.delivery_id);
    const seenEvents = new Set(this.receivers.received.filter((r) => r.mode === 'ok').map((r) => r.eventIdHeader));
    const maxAttempts = this.target.webhookMaxAttempts;
    for (const e of db.events) {
      const mode = hookOf.get(e.account_id);
      if (!e.delivery_id) {
        v.push(`event ${e.id} (${e.type}): no delivery${e.dispatched_at ? '' : ' (still in the outbox)'}`);
        continue;
      }
      if (mode === 'ok') {
        if (e.delivery_status !== 'succeeded' && !(e.delivery_status === 'pending' && !opts.strict)) v.push(`event ${e.id} to a 200 receiver: delivery ${e.delivery_status} after ${e.attempts} attempts`);
        if (e.delivery_status === 'succeeded' && !seenEvents.has(e.id)) v.push(`event ${e.id}: delivered, the receiver never saw it`);
      } else {
        if (e.delivery_status === 'succeeded') v.push(`event ${e.id} to a ${mode} receiver: marked succeeded`);
        // `attempts` counts every request begun: one cut short by a killed worker is made again.
        if (e.delivery_status === 'failed' && e.attempts < maxAttempts) v.push(`event ${e.id}: failed after ${e.attempts} attempts, fewer than ${maxAttempts}`);
        if (e.delivery_status === 'failed' && e.attempts > maxAttempts) this.count('deliveries failed with an extra attempt (a worker died mid-attempt)');
        if (e.delivery_status === 'pending' && (opts.strict || !e.next_attempt_at)) v.push(`event ${e.id} to a ${mode} receiver: pending ${e.next_attempt_at ? 'in backoff' : 'with no next attempt'}${opts.strict ? ' after the drain' : ''}`);
      }
    }
    for (const r of this.receivers.received) {
      if (r.mode === 'redirected') v.push('a webhook redirect was followed');
      else if (!r.eventIdHeader || r.eventIdHeader !== r.bodyEventId) v.push(`a webhook request's event id header ${r.eventIdHeader} differs from its body ${r.bodyEventId}`);
    }
    const deliveryOfEvent = new Map(db.events.map((e) => [e.id, e.delivery_id]));
    for (const r of this.receivers.received) {
      // The header is `<deliveryId>.<attempt>`: every attempt of one event is the same delivery.
      const deliveryId = r.deliveryIdHeader?.replace(/\.\d+$/, '');
      if (r.eventIdHeader && deliveryOfEvent.has(r.eventIdHeader) && deliveryOfEvent.get(r.eventIdHeader) !== deliveryId) v.push(`event ${r.eventIdHeader} sent under delivery ${r.deliveryIdHeader}, Postgres has ${deliveryOfEvent.get(r.eventIdHeader)}`);
    }
    counts.events = db.events.length;
    for (const [k, n] of Object.entries(countBy(db.events, (e) => `${hookOf.get(e.account_id)}/${e.delivery_status}`))) counts[`deliveries ${k}`] = n;
    counts['webhook requests received'] = this.receivers.received.length;

    // From the API: balances and orders read back as Postgres holds them.
    for (const a of this.accounts) {
      const res = await this.request(a, 'GET', '/balance', undefined, { retries: 10 });
      const dbBalance = db.accounts.find((x) => x.id === a.accountId)?.balance;
      if (res.status !== 200 || cents(res.body.balance) !== cents(dbBalance)) v.push(`GET /balance of ${a.accountId}: ${res.status} ${res.body?.balance}, Postgres ${dbBalance}`);
    }
    const sample = [...this.acks.values()].filter((a) => a.kind !== 'redemption').slice(0, 200);
    for (const ack of sample) {
      const account = this.accounts.find((a) => a.accountId === ack.accountId)!;
      const res = await this.request(account, 'GET', `/orders/${ack.id}`, undefined, { retries: 10 });
      const row = ordersById.get(ack.id);
      if (res.status !== 200 || res.body.status !== row?.status) v.push(`GET /orders/${ack.id}: ${res.status} ${res.body?.status}, Postgres ${row?.status}`);
    }
    counts['orders read back through the API'] = sample.length;

    // Temporal: nothing failed, terminated or timed out; nothing running without a reason.
    const wfs = await this.workflows();
    const workflows = countBy(wfs, (w) => `${w.type} ${w.status}`);
    const attention = new Set(db.orders.filter((o) => o.fulfillment_status === 'needs_attention').map((o) => `procure:${o.id}`));
    const client = await this.temporalClient();
    for (const w of wfs) {
      if (['FAILED', 'TERMINATED', 'TIMED_OUT', 'CANCELLED'].includes(w.status)) v.push(`workflow ${w.workflowId} (${w.type}) ${w.status}`);
      if (w.status !== 'RUNNING') continue;
      const desc = await client.workflow.getHandle(w.workflowId, w.runId).describe().catch(() => undefined);
      const failing = desc?.raw.pendingActivities?.filter((p) => (p.attempt ?? 0) > 3) ?? [];
      if (failing.length) v.push(`workflow ${w.workflowId}: activity ${failing[0].activityType?.name} at attempt ${failing[0].attempt} (${failing[0].lastFailure?.message ?? ''})`);
      if (opts.strict && !attention.has(w.workflowId)) v.push(`workflow ${w.workflowId} (${w.type}) still running after the drain`);
    }
    counts['workflows'] = wfs.length;

    const statuses = countBy(this.http, (h) => String(h.status));
    const latencies = this.http.map((h) => h.ms).sort((a, b) => a - b);
    counts['http requests'] = this.http.length;
    counts['http p50 ms'] = latencies[Math.floor(latencies.length / 2)] ?? 0;
    counts['http p99 ms'] = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
    counts['http max ms'] = latencies[latencies.length - 1] ?? 0;

    const lines = [`soak report (seed ${this.plan.seed})`, '', 'counts:'];
    for (const k of Object.keys(counts).sort()) lines.push(`  ${k.padEnd(58)} ${counts[k]}`);
    lines.push('', 'http statuses:', ...Object.entries(statuses).map(([k, n]) => `  ${k.padEnd(58)} ${n}`));
    lines.push('', 'workflows:', ...Object.entries(workflows).sort().map(([k, n]) => `  ${k.padEnd(58)} ${n}`));
    if (opts.faults?.length) lines.push('', 'faults injected:', ...opts.faults.map((f) => `  ${f}`));
    lines.push('', v.length ? `BROKEN INVARIANTS (${v.length}):` : 'every invariant holds', ...v.map((x) => `  ✗ ${x}`));
    return { seed: this.plan.seed, counts, statuses, violations: v, workflows, text: lines.join('\n') };
  }

  async close(): Promise<void> {
    this.stopRequested = true;
    await this.receivers.close().catch(() => undefined);
    await this.temporal?.connection.close().catch(() => undefined);
  }
}

/** The business id inside a workflow id (order:<account>:<ext> → account; procure:<order> → order, ...). */
function subjectOf(workflowId: string): string {
  const [kind, a] = workflowId.split(':');
  if (kind === 'order' || kind === 'topup' || kind === 'procure' || kind === 'delivery' || kind === 'redemption') return a;
  return workflowId;
}

function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    const list = m.get(k);
    if (list) list.push(x);
    else m.set(k, [x]);
  }
  return m;
}

function countBy<T>(xs: T[], key: (x: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
}
