// How many placements one API process lets run at once: an adaptive concurrency limit, AIMD on
// placement latency (additive increase, multiplicative decrease), as in Netflix's
// concurrency-limits (`AIMDLimit`) and TCP's congestion window. No I/O: the admission gate
// (./admission.ts) feeds it and reads it.
//
// The limit is decided once per window of `targetMs` (not per sample, so one slow placement among
// many does not cut it), and only when it was in use (more than half of it in flight at some
// moment in the window):
// - the window's placements finished in time (90th percentile within the target, an unanswered
//   one counting as over it): it grows by one;
// - they did not: it shrinks in proportion to the overshoot (× target / p90, between × 0.7 and
//   × 0.9), so a deep overload is left in a few windows without cutting far below the knee (the
//   latencies that close a window are of placements admitted a latency ago, at the older limit);
// - the workers reported their workflow tasks waiting longer than they should (`congestion`): it
//   shrinks by a tenth, however fast this process's own placements were.
// A window in which the limit was far from in use changes nothing: it was not what held placements
// back, slowness there is not caused by the concurrency this process admits (a slow provider, a
// pause, another process's load), and cutting it would only shed the next burst for nothing.
//
// Beside the limit it keeps the level shown under load (`shown`): the most placements that were
// in flight at once in a window whose placements finished in time, and one more, cut like the
// limit in a late window that reached over half of it. A window in which the gate refused an
// account for want of room at that level (`refused`) also grows it by one when in time: accounts
// sharing the level keep some of it free for each other, so while they press against it the most
// in flight stays under it, and it would never grow however fast placements were.
// A window in which over a fifth of the placements asked for were refused is a standing overload,
// not a burst: the refused come back (Retry-After) whatever the level, and past the engine's knee
// a higher level only queues what it admits (CoDel's standing queue). There the level answers to
// half the latency target: grown by one while the window's p90 is well within it, cut by the
// overshoot past it, held between. The limit is what one reseller's burst on a
// quiet process may take; `shown` is what the process has served in time while busy, and it is kept
// through quiet spells (what the engine can do does not change while nobody asks). Lending room
// between accounts goes by the second (./admission.ts), so load that steps up while accounts place
// side by side is met at the level a load proved, instead of at an initial limit nothing measured.
//
// In time is all the level needs to grow unless the operator puts latency first
// (`queueAllowance`): past the engine's knee more in flight only queues, each placement waits
// longer and few more of them finish. Then the level also keeps the latency the process has seen
// without a queue (`baseline`: the lowest 10th percentile of any window with ten placements or more,
// kept like the level) and estimates, as TCP Vegas and Netflix's `VegasLimit` do, how many of a
// window's placements were queued rather than served: in flight × (1 − baseline / the window's
// median). It grows only while that queue is within the allowance (× log10 of the level), and comes
// down by one while it is over twice that.

export interface AdaptiveLimitOptions {
  initial: number;
  min: number;
  max: number;
  /** The window's placements should finish within this (their 90th percentile); also the window's length. */
  targetMs: number;
  /** Placements (× log10 of the level) that may queue before the shown level stops growing; 0 or absent: no such check. */
  queueAllowance?: number;
}

/** The share of a window's placements that may go over the target (or unanswered) before the limit shrinks. */
const OVER_TARGET_SHARE = 0.1;
/**
 * The shown level never holds lending below this: a window of light load shows only what was
 * asked, not what the process can do, and a few accounts placing a handful each are no overload.
 */
const SHOWN_FLOOR = 8;
/** Refused over this share of the placements asked for in a window: a standing overload. */
const OVERLOAD_SHARE = 0.2;
/** In a standing overload the level answers to this share of the latency target... */
const OVERLOAD_TARGET_SHARE = 0.5;
/** ...and grows only while the window's p90 is within this share of that. */
const OVERLOAD_GROW_SHARE = 0.8;
/** A window needs this many answers to say what a placement takes without a queue. */
const BASELINE_SAMPLES = 10;

export class AdaptiveLimit {
  private value: number;
  private windowStart: number;
  private latencies: number[] = [];
  private dropped = 0;
  private peakInFlight = 0;
  private congested = false;
  private admitted = 0;
  private refusals = 0;
  private shown: number | undefined;
  private baseline: number | undefined;
  /** Placements (× log10 of the level) that may queue before `shown` stops growing; 0: no such check. */
  private readonly allowance: number;

  constructor(
    private readonly opts: AdaptiveLimitOptions,
    now: number,
  ) {
    this.value = Math.min(opts.max, Math.max(opts.min, opts.initial));
    this.windowStart = now;
    this.allowance = opts.queueAllowance ?? 0;
  }

  get limit(): number {
    return Math.floor(this.value);
  }

  /**
   * The level shown under load (SHOWN_FLOOR at least), never above the limit; the limit
   * while none is.
   */
  get shownLimit(): number {
    if (this.shown === undefined) return this.limit;
    return Math.min(this.limit, Math.max(SHOWN_FLOOR, Math.floor(this.shown)));
  }

  /** A placement was admitted; `inFlight` counts it. */
  started(inFlight: number, now: number): void {
    this.roll(now);
    this.admitted++;
    this.peakInFlight = Math.max(this.peakInFlight, inFlight);
  }

  /** A placement was answered after `latencyMs`. */
  answered(latencyMs: number, now: number): void {
    this.roll(now);
    this.latencies.push(latencyMs);
  }

  /** A placement got no answer in time (the placement deadline, the engine out of reach). */
  unanswered(now: number): void {
    this.roll(now);
    this.dropped++;
  }

  /** A placement was refused because its account had no room left at the level shown. */
  refused(now: number): void {
    this.roll(now);
    this.refusals++;
  }

  /** The workers' workflow tasks wait longer than they should. */
  congestion(now: number): void {
    this.roll(now);
    this.congested = true;
  }

  /** Closes the current window (and any idle ones since) once `targetMs` has passed. */
  private roll(now: number): void {
    if (now - this.windowStart < this.opts.targetMs) return;
    this.decide();
    this.windowStart = now;
    this.latencies = [];
    this.dropped = 0;
    this.peakInFlight = 0;
    this.congested = false;
    this.admitted = 0;
    this.refusals = 0;
  }

  private decide(): void {
    const peak = this.peakInFlight;
    const measured = this.latencies.length + this.dropped > 0;
    // An unanswered placement counts as one over any target.
    const p90 = measured
      ? percentile(1 - OVER_TARGET_SHARE, [...this.latencies, ...Array<number>(this.dropped).fill(Infinity)])
      : undefined;
    this.value = this.next(this.value, p90, this.value + 1, this.peakInFlight > this.value / 2, this.opts.targetMs);
    if (this.allowance > 0 && this.latencies.length >= BASELINE_SAMPLES)
      this.baseline = Math.min(this.baseline ?? Infinity, percentile(0.1, this.latencies));
    if (this.shown === undefined && !(measured && peak > 0)) return;
    const shown = this.shown ?? peak;
    // The level as lent (the floor at least) is what an account pressed against.
    const lent = Math.max(SHOWN_FLOOR, Math.floor(shown));
    const grown = Math.max(shown, peak + 1);
    if (this.refusals > OVERLOAD_SHARE * (this.admitted + this.refusals)) {
      const target = this.opts.targetMs * OVERLOAD_TARGET_SHARE;
      const roomy = p90 !== undefined && p90 <= target * OVERLOAD_GROW_SHARE;
      this.shown = this.next(
        shown,
        p90,
        this.queued(peak, shown, roomy ? Math.max(grown, lent + 1) : grown),
        true,
        target,
      );
      return;
    }
    const pressedTo = this.refusals > 0 ? lent + 1 : 0;
    const inUse = this.refusals > 0 || peak > shown / 2;
    this.shown = this.next(shown, p90, this.queued(peak, shown, Math.max(grown, pressedTo)), inUse, this.opts.targetMs);
  }

  /**
   * What an in-time window makes of the shown level: `grown` while few of its placements queued,
   * one less while many did, else as it was.
   */
  private queued(peak: number, shown: number, grown: number): number {
    const { allowance } = this;
    if (allowance <= 0 || this.baseline === undefined || this.latencies.length === 0) return grown;
    const median = percentile(0.5, this.latencies);
    const queue = median > this.baseline ? peak * (1 - this.baseline / median) : 0;
    const scale = Math.log10(Math.max(10, shown));
    if (queue <= allowance * scale) return grown;
    return queue >= 2 * allowance * scale ? Math.max(SHOWN_FLOOR, shown - 1) : shown;
  }

  /** A level after this window: `grown` if it was in use and in time, cut if in use and late. */
  private next(level: number, p90: number | undefined, grown: number, inUse: boolean, targetMs: number): number {
    const { min, max } = this.opts;
    if (!inUse) return level;
    if (this.congested) return Math.max(min, level * 0.9);
    if (p90 === undefined) return level;
    if (p90 <= targetMs) return Math.min(max, grown);
    return Math.max(min, level * Math.min(0.9, Math.max(0.7, targetMs / p90)));
  }
}

function percentile(p: number, values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}
