// The soak's deadline invariant: with the reconciler on, no order, top-up, redemption or
// webhook event stays non-final past its deadline plus one reconcile period. A row that lost its
// workflow is left alone for the grace period, then found by the next run: so a row may be late by
// RECONCILE_GRACE_SECONDS + RECONCILE_SECONDS, and a little more for the run's own steps and the
// restarted workflow's first task. Sampled while the soak runs, from Postgres (its clock), and once
// more at the check. Time inside an injected fault (a worker killed, every worker down, Temporal or
// Postgres stopped) and its recovery is excused: nothing can move then, and no period can hold.
import type { Client as PgClient } from 'pg';
import type { Findings } from './soak-invariants';

/** The service settings the deadlines come from (SOAK_SERVICE_ENV, or the stack's config). */
export interface DeadlineSettings {
  /** RECONCILE_SECONDS; 0: the stack runs no reconciler, and the invariant is not checked. */
  reconcileSeconds: number;
  reconcileGraceSeconds: number;
  webhookTimeoutMs: number;
  redemptionRefreshSeconds: number;
  procurementDeadlineSeconds: number;
}

/** Beyond grace and period: a run's own steps and a restarted workflow's first task, on a loaded 2-core machine. */
const SLACK_SECONDS = 10;

/**
 * After a fault ends, how long its effects may still hold things up: an activity in flight on a
 * killed worker times out after its 30 s start-to-close, a workflow task on its sticky queue after
 * 10 s, and an activity that retried through an outage waits out its backoff (up to a minute).
 */
export const FAULT_RECOVERY_MS = 60_000;

/** How often the watch samples while the soak runs. */
const SAMPLE_EVERY_MS = 2_000;

interface OverdueRow {
  what: string;
  id: string;
  state: string;
  due_ms: number;
}

/**
 * Each non-final row of the accounts with its deadline, if that deadline is more than
 * `allowanceSeconds` ago:
 * - an order or top-up waiting for its payment: its expiresAt (its workflow expires it then);
 * - a paid order: delivered at once, a direct-code one within PROCUREMENT_DEADLINE_SECONDS (then
 *   it is delivered or waits for support, which is final here);
 * - a redemption: its next status refresh after its last change (the soak's upstream settles an
 *   auto product at the first refresh);
 * - an event: dispatched when written; its delivery, while pending, attempted at its next attempt,
 *   or, with an attempt open, done with it by the attempt's timeout (the receiver's deadline plus
 *   the 30 s in which Temporal notices a worker that died mid-POST).
 */
async function overdueRows(
  c: PgClient,
  accounts: string[],
  s: DeadlineSettings,
  allowanceSeconds: number,
): Promise<OverdueRow[]> {
  const { rows } = await c.query<OverdueRow>(
    `select what, id, state, (extract(epoch from due) * 1000)::float8 as due_ms from (
       select kind as what, id, status as state, coalesce(expires_at, created_at) as due
         from orders where account_id = any($1) and status = 'pending'
       union all
       select kind, id, status || '/' || coalesce(fulfillment_status, '-'),
              coalesce(paid_at, updated_at) + case when delivery_type = 'direct_code' then make_interval(secs => $2) else interval '0' end
         from orders where account_id = any($1) and status = 'paid' and coalesce(fulfillment_status, '') <> 'needs_attention'
       union all
       select 'redemption', id, status, updated_at + make_interval(secs => $3)
         from redemptions where account_id = any($1) and status in ('pending', 'processing')
       union all
       select 'event', id, 'in the outbox', created_at
         from events where account_id = any($1) and dispatched_at is null
       union all
       select 'event', d.event_id, 'delivery pending' || case when d.attempt_open then ', attempt ' || d.attempts || ' open' else '' end,
              case when d.attempt_open then d.updated_at + make_interval(secs => $4) else d.next_attempt_at end
         from webhook_deliveries d where d.account_id = any($1) and d.status = 'pending'
     ) x where due + make_interval(secs => $5) < now()`,
    [
      accounts,
      s.procurementDeadlineSeconds,
      s.redemptionRefreshSeconds,
      s.webhookTimeoutMs / 1000 + 30,
      allowanceSeconds,
    ],
  );
  return rows;
}

/** Samples the deadline invariant while the soak runs; `fault()` marks the time it excuses. */
export class DeadlineWatch {
  private readonly faults: { from: number; to?: number }[] = [];
  private readonly late = new Map<string, string>();
  private timer?: NodeJS.Timeout;
  private sampling?: Promise<void>;
  private samples = 0;
  private failedSamples = 0;

  constructor(
    private readonly settings: DeadlineSettings,
    private readonly accounts: () => string[],
    private readonly pg: <T>(fn: (c: PgClient) => Promise<T>) => Promise<T>,
  ) {}

  /** One reconcile period after the grace, and the slack: how late a row may become final. */
  get allowanceSeconds(): number {
    return this.settings.reconcileGraceSeconds + this.settings.reconcileSeconds + SLACK_SECONDS;
  }

  private get enabled(): boolean {
    return this.settings.reconcileSeconds > 0;
  }

  start(): void {
    if (!this.enabled || this.timer) return;
    this.timer = setInterval(() => void this.sample(), SAMPLE_EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sampling;
  }

  /** A fault begins now; the returned function ends it (its recovery time follows). */
  fault(): () => void {
    const f: { from: number; to?: number } = { from: Date.now() };
    this.faults.push(f);
    return () => void (f.to ??= Date.now());
  }

  /** Time within [from, to] covered by a fault or its recovery. */
  private excused(from: number, to: number): number {
    const spans = this.faults
      .map((f) => [Math.max(from, f.from), Math.min(to, (f.to ?? to) + FAULT_RECOVERY_MS)] as const)
      .filter(([a, b]) => b > a)
      .sort((x, y) => x[0] - y[0]);
    let total = 0;
    let reached = from;
    for (const [a, b] of spans) {
      if (b <= reached) continue;
      total += b - Math.max(a, reached);
      reached = b;
    }
    return total;
  }

  /** One look at Postgres: every row now late by more than the allowance, fault time excused. */
  sample(): Promise<void> {
    if (!this.enabled || this.sampling) return this.sampling ?? Promise.resolve();
    this.sampling = (async () => {
      try {
        const rows = await this.pg((c) => overdueRows(c, this.accounts(), this.settings, this.allowanceSeconds));
        const now = Date.now();
        this.samples++;
        for (const r of rows) {
          const excused = this.excused(r.due_ms, now);
          const lateMs = now - r.due_ms - excused;
          const key = `${r.what} ${r.id}`;
          if (lateMs > this.allowanceSeconds * 1000 && !this.late.has(key)) {
            const faultTime = excused > 0 ? ` (not counting ${Math.round(excused / 1000)} s of injected faults)` : '';
            this.late.set(
              key,
              `${key} still ${r.state} ${Math.round(lateMs / 1000)} s past its deadline${faultTime}: more than one reconcile period after the grace (${this.allowanceSeconds} s allowed)`,
            );
          }
        }
      } catch {
        // Postgres down (an injected outage, excused as a fault): the next sample looks again.
        this.failedSamples++;
      } finally {
        this.sampling = undefined;
      }
    })();
    return this.sampling;
  }

  /** A last sample, then what the watch saw. */
  async check({ violations: v, counts }: Findings): Promise<void> {
    if (!this.enabled) {
      counts['deadline invariant'] = 'not checked: the stack runs no reconciler (RECONCILE_SECONDS=0)';
      return;
    }
    await this.sampling;
    await this.sample();
    v.push(...this.late.values());
    counts['deadline samples (non-final rows vs deadline + grace + period)'] = this.samples;
    if (this.failedSamples) counts['deadline samples that could not read Postgres'] = this.failedSamples;
    counts['deadline allowance s (grace + period + slack)'] = this.allowanceSeconds;
    counts['faults excused'] = this.faults.length;
  }
}
