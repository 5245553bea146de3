import { AsyncLocalStorage } from 'node:async_hooks';
import type { Config } from '../config';
import { ApiError } from '../domain/errors';
import {
  admissionInFlight,
  admissionLimit,
  admissionShownLimit,
  placementsAdmitted,
  placementsShed,
} from '../metrics/registry';
import { isTemporalUnavailable } from '../temporal/temporal-errors';
import { AdaptiveLimit } from './adaptive-limit';
import type { BudgetSeen } from './rate-limit';
import type { WorkersView } from './worker-watch';

// Admission control of placements (orders and top-ups, REST, MCP and the account area) in one API
// process. A placement is let through only while
// - some worker polls the task queue (a heartbeat row fresher than WORKER_HEARTBEAT_STALE_MS,
//   ./worker-watch.ts): with none, it could only wait for PLACEMENT_TIMEOUT_MS;
// - fewer placements than the adaptive limit run in this process (./adaptive-limit.ts: it finds
//   how many finish within ADMISSION_LATENCY_TARGET_MS, and backs off while the workers report
//   their workflow tasks waiting over ADMISSION_WORKER_QUEUE_MS);
// - the account runs fewer than its share of that limit (ADMISSION_ACCOUNT_SHARE) whenever another
//   account has a placement in flight or asked for one within the last second, so one reseller's
//   burst cannot take every place while others wait. An account alone may use the whole limit;
// - past its fair part (the limit split evenly among the accounts placing), an account also leaves
//   free the room the other accounts held at once lately (their peak over the last two seconds,
//   and one more): it borrows what they do not use, up to its share, and gives way before they
//   come back for it. So the busy account gets the throughput the others leave, and theirs is
//   refused only when they ask for more than they just had;
// - while accounts place side by side (another account has a placement in flight, or had one
//   when a placement was admitted within the last second), shares and parts are counted out of the
//   level this process has shown it serves in time under load (./adaptive-limit.ts; with
//   ADMISSION_QUEUE_ALLOWANCE, before its placements queue; in a standing overload, within half
//   the latency target), not of the limit an idle process keeps high for one reseller's burst: a
//   step up in load is lent only what a load proved, and no surge waits behind it. A refusal over
//   an account's share tells the level that accounts press against it.
// Anything else is answered at once, before anything is read or written, with the spec's 503
// (`retryable: true`, Retry-After): a retry of it is a new request, placed once like any other.
// REST placements meet the limit, and a key's account over its share, before the key is even
// looked up (`refuseEarly`), so a refusal at capacity costs the database nothing when it is busiest.
// One let through holds its place while its key is read (`hold`), until `run` takes it over or the
// request ends: otherwise every request arriving while a place is free would pass the early check,
// and all but one would be refused after their key's statement and a read for a replay. A place
// held for a known account is taken over without a second check; one held before the gate knew the
// key's account (its first placement here) meets the limit and the share again in `run`.

export type PlacementKind = 'order' | 'topup';
export type ShedReason = 'limit' | 'account_share' | 'no_worker';

export interface AdmissionSettings {
  enabled: boolean;
  targetMs: number;
  initialLimit: number;
  maxLimit: number;
  accountShare: number;
  workerQueueTargetMs: number;
  queueAllowance: number;
}

export function admissionSettingsOf(c: Config): AdmissionSettings {
  return {
    enabled: c.ADMISSION_CONTROL,
    targetMs: c.ADMISSION_LATENCY_TARGET_MS,
    initialLimit: c.ADMISSION_INITIAL_LIMIT,
    maxLimit: c.ADMISSION_MAX_LIMIT,
    accountShare: c.ADMISSION_ACCOUNT_SHARE,
    workerQueueTargetMs: c.ADMISSION_WORKER_QUEUE_MS,
    queueAllowance: c.ADMISSION_QUEUE_ALLOWANCE,
  };
}

/** The lowest the adaptive limit goes: a few placements always run, so latency can be measured again. */
const MIN_LIMIT = 4;
const RETRY_AFTER_SECONDS = 1;
/** Another account that asked for a placement this recently counts as waiting for room. */
const RECENT_MS = 1000;
/** How long the most the other accounts held at once is kept free for them (in one-second steps). */
const OTHERS_PEAK_SECONDS = 2;
/**
 * The longest a placement waits for that read before it is refused for want of a worker: room for
 * a read on a busy machine (tens of milliseconds), and still at once next to the placement
 * deadline while Postgres is slow to answer (the read goes on for the view).
 */
const WORKER_REREAD_WAIT_MS = 250;
/** Keys whose account this process remembers for refusing early (the oldest is forgotten first). */
const KEY_ACCOUNTS_KEPT = 10_000;

const SHED_MESSAGES: Record<ShedReason, string> = {
  limit: 'The service is at capacity; nothing was done. Retry the same request after Retry-After',
  account_share:
    "This account's placements already take their share of the service's capacity; nothing was done. Retry the same request after Retry-After",
  no_worker:
    'No worker is placing orders right now (a restart); nothing was done. Retry the same request after Retry-After',
};

/** A placement refused by admission control: the spec's 503, expected under load, and no outage. */
export class PlacementRefused extends ApiError {
  constructor(readonly reason: ShedReason) {
    super('service_unavailable', SHED_MESSAGES[reason], { reason }, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
  }
}

/** A REST placement let through by refuseEarly and not yet at `run`. */
export interface PlacementHold {
  /** Its key's account, when the gate has seen the key before. */
  readonly accountId?: string;
  released: boolean;
}

export class PlacementGate {
  private readonly limiter: AdaptiveLimit;
  private inFlight = 0;
  private readonly byAccount = new Map<string, number>();
  /** When each account last asked for a placement (admitted or refused), for about a second. */
  private readonly seen = new Map<string, number>();
  private seenPrunedAt: number;
  /**
   * Per second of the last OTHERS_PEAK_SECONDS, the most placements held at once by every account
   * but the one holding most (newest first): the room a borrowing account leaves free.
   */
  private readonly restPeaks: number[] = Array<number>(OTHERS_PEAK_SECONDS).fill(0);
  private restPeakSecond = 0;
  /** When a placement was last admitted while another account had one in flight. */
  private contendedAt = -Infinity;
  /** Key digest → its account and budget as last counted, most recent last (at most KEY_ACCOUNTS_KEPT). */
  private readonly keyAccounts = new Map<string, { accountId: string; budget?: BudgetSeen }>();
  /** Placements held between refuseEarly and `run`: all of them, and by account where known. */
  private held = 0;
  private readonly heldBy = new Map<string, number>();
  /** The hold of the request being served, for `run` to take over. */
  private readonly holds = new AsyncLocalStorage<PlacementHold>();

  constructor(
    private readonly settings: AdmissionSettings,
    /** The workers' heartbeat rows as last read (every half beat), and a read of them now. */
    private readonly workers: { readonly current: WorkersView; refresh(): Promise<void> },
    private readonly now: () => number = () => performance.now(),
  ) {
    this.limiter = new AdaptiveLimit(
      {
        initial: settings.initialLimit,
        min: MIN_LIMIT,
        max: settings.maxLimit,
        targetMs: settings.targetMs,
        queueAllowance: settings.queueAllowance,
      },
      this.now(),
    );
    this.seenPrunedAt = this.now();
    admissionLimit.set(this.limiter.limit);
    admissionShownLimit.set(this.limiter.shownLimit);
  }

  /**
   * Runs one placement if it is admitted, or throws the 503 at once. `sampled`: its latency is the
   * engine's and the database's (a balance order), not an outside party's (a checkout opened
   * inside it), so it may steer the limit.
   */
  async run<T>(kind: PlacementKind, accountId: string, sampled: boolean, place: () => Promise<T>): Promise<T> {
    if (!this.settings.enabled) return place();
    const hold = this.holds.getStore();
    // A place held for this account was checked against the limit and the account's share when it
    // was taken, and counted since: it is taken over as it is. A refusal then only ever comes
    // before the key is read, at once, never after waiting for that read on a busy database.
    const heldForIt = hold !== undefined && !hold.released && hold.accountId === accountId;
    if (hold) this.releaseHold(hold);
    // Before a refusal for want of a worker, the rows are read again: a worker that started within
    // the last half beat (its row is written before it polls) is counted, not refused.
    if (noWorker(this.workers.current)) await within(WORKER_REREAD_WAIT_MS, this.workers.refresh());
    const startedAt = this.now();
    this.admit(kind, accountId, startedAt, heldForIt);
    try {
      const result = await place();
      this.answered(sampled, startedAt);
      return result;
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) this.answered(sampled, startedAt);
      else if (isTemporalUnavailable(err) || (err instanceof ApiError && err.code === 'service_unavailable'))
        this.limiter.unanswered(this.now());
      throw err;
    } finally {
      this.release(accountId);
    }
  }

  /**
   * Refuses at once, before the caller's key is read, a placement this process could take from
   * nobody because its limit is full. The rest is checked by `run`, after the key: with no worker,
   * a replay of a placed order is still answered from Postgres, which is not the busy part then.
   */
  refuseEarly(kind: PlacementKind, keyDigest?: string): void {
    if (!this.settings.enabled) return;
    if (this.inFlight + this.held >= this.limiter.limit) this.shed(kind, 'limit');
    const accountId = keyDigest === undefined ? undefined : this.keyAccounts.get(keyDigest)?.accountId;
    if (accountId !== undefined && this.overShare(accountId, this.now(), this.heldBy.get(accountId) ?? 0))
      this.shed(kind, 'account_share');
  }

  /**
   * Holds a place for a request refuseEarly let through, while its key is read: later early checks
   * count it as in flight (for its key's account, if known). `within` runs the rest of the request
   * with it, so `run` takes it over; `releaseHold` gives it back if the request ends before that.
   */
  hold(keyDigest?: string): PlacementHold {
    const accountId = keyDigest === undefined ? undefined : this.keyAccounts.get(keyDigest)?.accountId;
    const hold: PlacementHold = { accountId, released: !this.settings.enabled };
    if (hold.released) return hold;
    this.held++;
    if (accountId !== undefined) this.heldBy.set(accountId, (this.heldBy.get(accountId) ?? 0) + 1);
    return hold;
  }

  within(hold: PlacementHold, fn: () => void): void {
    this.holds.run(hold, fn);
  }

  releaseHold(hold: PlacementHold): void {
    if (hold.released) return;
    hold.released = true;
    this.held--;
    if (hold.accountId === undefined) return;
    const left = (this.heldBy.get(hold.accountId) ?? 1) - 1;
    if (left > 0) this.heldBy.set(hold.accountId, left);
    else this.heldBy.delete(hold.accountId);
  }

  /**
   * Notes which account a key (by its digest) is, and what its budget was when last counted, so
   * the next placement of that key over its account's share is refused before the key is read,
   * with the budget's headers. A wrong or stale entry can only refuse (nothing is done, the 503
   * says retry); it never lets anything through.
   */
  remember(keyDigest: string, accountId: string, budget?: BudgetSeen): void {
    if (!this.settings.enabled) return;
    // A window's count only grows: of statements answered out of order, the lowest remaining stands.
    const before = this.keyAccounts.get(keyDigest)?.budget;
    if (budget && before && before.resetAt === budget.resetAt && before.remaining < budget.remaining)
      budget = { ...budget, remaining: before.remaining };
    this.keyAccounts.delete(keyDigest);
    if (this.keyAccounts.size >= KEY_ACCOUNTS_KEPT) this.keyAccounts.delete(this.keyAccounts.keys().next().value!);
    this.keyAccounts.set(keyDigest, { accountId, budget });
  }

  /** The key's budget as last counted in this process, if it was. */
  budgetOf(keyDigest: string): BudgetSeen | undefined {
    return this.keyAccounts.get(keyDigest)?.budget;
  }

  /** Whether the account, holding `held` more places than it has in flight, is over its share now. */
  private overShare(accountId: string, now: number, held = 0): boolean {
    const mine = (this.byAccount.get(accountId) ?? 0) + held;
    if (!this.othersAbout(accountId, now)) return false;
    // Room is shared out of the level shown under load while accounts place side by side, so a step
    // up in load is not lent the limit an idle process keeps for one burst.
    const contended = this.othersPlacing(accountId) || now - this.contendedAt <= RECENT_MS;
    const limit = contended ? this.limiter.shownLimit : this.limiter.limit;
    if (mine >= Math.max(1, Math.ceil(limit * this.settings.accountShare))) return true;
    // Past its fair part it borrows only what leaves the others their recent peak and one place more.
    const fairPart = Math.ceil(limit / this.accountsPlacing(accountId));
    return mine >= fairPart && mine + 1 + this.restPeak(now) + 1 > limit;
  }

  /** Whether an account other than this one has a placement in flight. */
  private othersPlacing(accountId: string): boolean {
    return this.byAccount.size > (this.byAccount.has(accountId) ? 1 : 0);
  }

  /** The accounts with placements in flight, this one among them (two at least). */
  private accountsPlacing(accountId: string): number {
    return Math.max(2, this.byAccount.size + (this.byAccount.has(accountId) ? 0 : 1));
  }

  /** The most the accounts but the biggest held at once over the last OTHERS_PEAK_SECONDS. */
  private restPeak(now: number): number {
    this.rollRestPeaks(now);
    return Math.max(...this.restPeaks);
  }

  /** What every account but the one holding most holds now. */
  private rest(): number {
    let biggest = 0;
    for (const n of this.byAccount.values()) biggest = Math.max(biggest, n);
    return this.inFlight - biggest;
  }

  private noteRest(now: number): void {
    this.rollRestPeaks(now);
    this.restPeaks[0] = Math.max(this.restPeaks[0], this.rest());
  }

  private rollRestPeaks(now: number): void {
    const second = Math.floor(now / 1000);
    const steps = Math.min(OTHERS_PEAK_SECONDS, second - this.restPeakSecond);
    if (steps <= 0) return;
    this.restPeaks.splice(OTHERS_PEAK_SECONDS - steps, steps);
    this.restPeaks.unshift(...Array<number>(steps).fill(this.rest()));
    this.restPeakSecond = second;
  }

  /** Admits a placement, or throws the 503; `held`: it holds a place refuseEarly counted for its account. */
  private admit(kind: PlacementKind, accountId: string, now: number, held: boolean): void {
    const view = this.workers.current;
    this.seen.set(accountId, now);
    if (noWorker(view)) this.shed(kind, 'no_worker');
    if (view.scheduleToStartMs != null && view.scheduleToStartMs > this.settings.workerQueueTargetMs)
      this.limiter.congestion(now);
    const limit = this.limiter.limit;
    admissionLimit.set(limit);
    admissionShownLimit.set(this.limiter.shownLimit);
    // Places other requests hold while their keys are read are theirs: they count here as they
    // did when those requests were let through.
    if (!held && this.inFlight + this.held >= limit) this.shed(kind, 'limit');
    if (!held && this.overShare(accountId, now, this.heldBy.get(accountId) ?? 0)) this.shed(kind, 'account_share');
    const mine = this.byAccount.get(accountId) ?? 0;
    if (this.othersPlacing(accountId)) this.contendedAt = now;
    this.inFlight++;
    this.byAccount.set(accountId, mine + 1);
    this.noteRest(now);
    admissionInFlight.set(this.inFlight);
    this.limiter.started(this.inFlight, now);
    placementsAdmitted.inc({ kind });
  }

  /** Whether another account has a placement in flight, or asked for one within the last second. */
  private othersAbout(accountId: string, now: number): boolean {
    if (this.othersPlacing(accountId)) return true;
    if (now - this.seenPrunedAt > RECENT_MS) {
      for (const [account, at] of this.seen) if (now - at > RECENT_MS) this.seen.delete(account);
      this.seenPrunedAt = now;
    }
    for (const [account, at] of this.seen) if (account !== accountId && now - at <= RECENT_MS) return true;
    return false;
  }

  private answered(sampled: boolean, startedAt: number): void {
    const now = this.now();
    if (sampled) this.limiter.answered(now - startedAt, now);
  }

  private release(accountId: string): void {
    this.inFlight--;
    const mine = (this.byAccount.get(accountId) ?? 1) - 1;
    if (mine > 0) this.byAccount.set(accountId, mine);
    else this.byAccount.delete(accountId);
    admissionInFlight.set(this.inFlight);
  }

  private shed(kind: PlacementKind, reason: ShedReason): never {
    placementsShed.inc({ kind, reason });
    // Asked for more than the level lends: it may grow while placements stay in time, and refusals
    // of over a fifth of those asking in a window make it a standing overload (./adaptive-limit.ts).
    if (reason === 'account_share') this.limiter.refused(this.now());
    throw new PlacementRefused(reason);
  }
}

const noWorker = (view: WorkersView) => view.known && view.live === 0;

/** Waits for `work` at most `ms`; its failure only ends the wait (the view stays as it was). */
async function within(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([work.catch(() => undefined), elapsed]);
  } finally {
    clearTimeout(timer);
  }
}
