import { PlacementGate, PlacementRefused } from '../../src/services/admission';
import { budgetStanding } from '../../src/services/rate-limit';

// A key whose account already holds its share while another account places is refused before the
// key is read (refuseEarly with the key's digest), once the gate has seen which account it is.
const settings = {
  enabled: true,
  targetMs: 600_000,
  initialLimit: 4,
  maxLimit: 4,
  accountShare: 0.5,
  workerQueueTargetMs: 500,
  queueAllowance: 0,
};
const workers = { current: { known: true, live: 1, scheduleToStartMs: null }, refresh: async () => undefined };

function held() {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { done, release };
}

const refusal = (fn: () => void) => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof PlacementRefused ? err.reason : err;
  }
};

/** Placements through `gate`, each held until its `hold` is released; `running` keeps them all. */
function placer(gate: PlacementGate) {
  const running: Promise<unknown>[] = [];
  /** Asks for one placement: its refusal, 'answered', or undefined while it runs. */
  const place = (account: string, hold: { done: Promise<void> }): Promise<string | undefined> => {
    const placing = gate.run('order', account, true, () => hold.done);
    running.push(placing.catch(() => undefined));
    return Promise.race([
      placing.then(
        () => 'answered',
        (err: unknown) => (err instanceof PlacementRefused ? err.reason : String(err)),
      ),
      new Promise<undefined>((r) => setImmediate(() => r(undefined))),
    ]);
  };
  const placeEach = async (n: number, account: string, hold: { done: Promise<void> }) => {
    const outcomes = [];
    for (let i = 0; i < n; i++) outcomes.push(await place(account, hold));
    return outcomes;
  };
  return { running, place, placeEach };
}

test('a remembered key over its account share is refused early; an unknown key or one under its share is not', async () => {
  const gate = new PlacementGate(settings, workers);
  const hold = held();
  const running = [
    gate.run('order', 'acc_heavy', true, () => hold.done),
    gate.run('order', 'acc_heavy', true, () => hold.done),
    gate.run('order', 'acc_light', true, () => hold.done),
  ];
  gate.remember('digest-heavy', 'acc_heavy');
  gate.remember('digest-light', 'acc_light');

  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBe('account_share');
  expect(refusal(() => gate.refuseEarly('order', 'digest-light'))).toBeUndefined();
  expect(refusal(() => gate.refuseEarly('order', 'digest-unknown'))).toBeUndefined();
  expect(refusal(() => gate.refuseEarly('order'))).toBeUndefined();

  hold.release();
  await Promise.all(running);
  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBeUndefined();
});

test('a request let through early holds its place until its placement runs or it ends, so a burst is not all let through to the key lookup', async () => {
  const gate = new PlacementGate(settings, workers);
  const placing = held();
  const running = [
    gate.run('order', 'acc_heavy', true, () => placing.done),
    gate.run('order', 'acc_light', true, () => placing.done),
  ];
  gate.remember('digest-heavy', 'acc_heavy');

  // The heavy account has one of its two places in flight: one request of it is let through and
  // holds the other while its key is read; the next is refused before its key is read.
  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBeUndefined();
  const first = gate.hold('digest-heavy');
  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBe('account_share');
  // Held places count against the limit too (4): two in flight, one held, one more held.
  expect(refusal(() => gate.refuseEarly('order'))).toBeUndefined();
  const unknown = gate.hold();
  expect(refusal(() => gate.refuseEarly('order'))).toBe('limit');

  // A request that ends before its placement (a wrong key, say) gives its place back, once.
  gate.releaseHold(unknown);
  gate.releaseHold(unknown);
  expect(refusal(() => gate.refuseEarly('order'))).toBeUndefined();

  // Its placement takes the held place over: counted once (three in flight, none held), not in
  // flight and held as well; the request's end then gives back nothing more.
  let third!: Promise<unknown>;
  gate.within(first, () => {
    third = gate.run('order', 'acc_heavy', true, () => placing.done);
  });
  expect(first.released).toBe(true);
  gate.releaseHold(first);
  expect(refusal(() => gate.refuseEarly('order'))).toBeUndefined();
  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBe('account_share');
  gate.hold();
  expect(refusal(() => gate.refuseEarly('order'))).toBe('limit');

  placing.release();
  await Promise.all([...running, third]);
  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBeUndefined();
});

test('a place held for a known account is taken over by its placement without a second check; one held before the key was known is checked again', async () => {
  const gate = new PlacementGate({ ...settings, initialLimit: 6, maxLimit: 6 }, workers);
  const placing = held();
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'placed',
      (err: unknown) => (err instanceof PlacementRefused ? err.reason : String(err)),
    );
  const running = [1, 2, 3].map(() => gate.run('order', 'acc_heavy', true, () => placing.done));
  gate.remember('digest-heavy', 'acc_heavy');

  // Alone, the heavy account may use the whole limit (6): its fourth request is let through and
  // holds a place while its key is read.
  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBeUndefined();
  const fourth = gate.hold('digest-heavy');
  // Meanwhile another account places, which puts the heavy account over its share (3 of 6): its
  // next request is refused before its key is read...
  running.push(gate.run('order', 'acc_light', true, () => placing.done));
  expect(refusal(() => gate.refuseEarly('order', 'digest-heavy'))).toBe('account_share');
  // ...while the one that held a place keeps it: it is not refused after its key's read.
  let placed!: Promise<unknown>;
  gate.within(fourth, () => {
    placed = outcome(gate.run('order', 'acc_heavy', true, () => placing.done));
  });
  expect(fourth.released).toBe(true);

  placing.release();
  await Promise.all(running);
  expect(await placed).toBe('placed');

  // A place held for a key the gate has not seen place (its account unknown until the key is read)
  // meets the limit and the account's share when its placement runs.
  const again = held();
  running.push(
    ...[1, 2, 3].map(() => gate.run('order', 'acc_heavy', true, () => again.done)),
    gate.run('order', 'acc_light', true, () => again.done),
  );
  expect(refusal(() => gate.refuseEarly('order', 'digest-new'))).toBeUndefined();
  const unknown = gate.hold('digest-new');
  let late!: Promise<unknown>;
  gate.within(unknown, () => {
    late = outcome(gate.run('order', 'acc_heavy', true, async () => 'ok'));
  });
  expect(await late).toBe('account_share');
  again.release();
  await Promise.all(running);
});

test("a key's budget as last counted: the lowest remaining of its window, the whole limit once the window has reset", () => {
  const gate = new PlacementGate(settings, workers);
  const budget = (remaining: number, resetAt: number) => ({ limit: 300, remaining, resetAt, windowSeconds: 60 });
  expect(gate.budgetOf('digest')).toBeUndefined();
  gate.remember('digest', 'acc', budget(297, 1_800_000_060));
  // A statement counted earlier but answered later does not raise what is left.
  gate.remember('digest', 'acc', budget(298, 1_800_000_060));
  expect(gate.budgetOf('digest')).toEqual(budget(297, 1_800_000_060));
  gate.remember('digest', 'acc', budget(299, 1_800_000_120));
  expect(gate.budgetOf('digest')).toEqual(budget(299, 1_800_000_120));

  const seen = budget(297, 1_800_000_060);
  expect(budgetStanding(seen, 1_800_000_059_999)).toEqual({ remaining: 297, resetAt: 1_800_000_060 });
  expect(budgetStanding(seen, 1_800_000_060_000)).toEqual({ remaining: 300, resetAt: 1_800_000_120 });
  expect(budgetStanding(seen, 1_800_000_200_500)).toEqual({ remaining: 300, resetAt: 1_800_000_240 });
});

test('with admission control off, nothing is remembered or refused', () => {
  const gate = new PlacementGate({ ...settings, enabled: false }, workers);
  gate.remember('digest', 'acc');
  expect(refusal(() => gate.refuseEarly('order', 'digest'))).toBeUndefined();
  expect(gate.budgetOf('digest')).toBeUndefined();
});

test('past its fair part an account borrows what the others leave, keeping free their recent peak and one place more', async () => {
  let now = 1_000_000;
  const gate = new PlacementGate(
    { ...settings, initialLimit: 10, maxLimit: 10, accountShare: 0.8 },
    workers,
    () => now,
  );
  const heavy = held();
  const light = held();
  const { running, place, placeEach } = placer(gate);

  expect(await placeEach(2, 'acc_light', light)).toEqual([undefined, undefined]);
  // The light account holds 2: the heavy one may hold 10 - 2 - 1 = 7, under its share of 8.
  expect(await placeEach(8, 'acc_heavy', heavy)).toEqual([...Array(7).fill(undefined), 'account_share']);
  // The room left is the light account's: it comes back to its peak, and one more.
  expect(await place('acc_light', light)).toBeUndefined();
  expect(await place('acc_other', light)).toBe('limit');

  light.release();
  await Promise.all(running.slice(0, 2));
  // In the next second the light account's peak (3) stays free for it when it asks again...
  now += 1_000;
  expect(await place('acc_light', { done: Promise.resolve() })).toBe('answered');
  expect(await place('acc_heavy', heavy)).toBe('account_share');
  // ...and once that is older than two seconds, the heavy account borrows up to its share of 8.
  now += 5_000;
  expect(await place('acc_light', { done: Promise.resolve() })).toBe('answered');
  expect(await placeEach(2, 'acc_heavy', heavy)).toEqual([undefined, 'account_share']);

  heavy.release();
  await Promise.all(running);
});

test('before refusing for want of a worker the gate reads the heartbeat rows again, once per placement', async () => {
  let view = { known: true, live: 0, scheduleToStartMs: null };
  let rereads = 0;
  const gate = new PlacementGate(settings, {
    get current() {
      return view;
    },
    refresh: async () => {
      rereads++;
    },
  });
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'placed',
      (err: unknown) => (err instanceof PlacementRefused ? err.reason : String(err)),
    );

  // Still no worker after the read: refused.
  expect(await outcome(gate.run('order', 'acc', true, async () => 'ok'))).toBe('no_worker');
  expect(rereads).toBe(1);

  // A worker that wrote its row since the view was last read is counted, and the placement goes on.
  const started = new PlacementGate(settings, {
    get current() {
      return view;
    },
    refresh: async () => {
      rereads++;
      view = { known: true, live: 1, scheduleToStartMs: null };
    },
  });
  expect(await outcome(started.run('order', 'acc', true, async () => 'ok'))).toBe('placed');
  expect(rereads).toBe(2);

  // With a worker in view, nothing is read before a placement.
  expect(await outcome(started.run('order', 'acc', true, async () => 'ok'))).toBe('placed');
  expect(rereads).toBe(2);
});

test('a read of the heartbeat rows that does not answer holds a refusal for want of a worker only briefly', async () => {
  const stuck = new PlacementGate(settings, {
    current: { known: true, live: 0, scheduleToStartMs: null },
    refresh: () => new Promise<void>(() => undefined),
  });
  const failing = new PlacementGate(settings, {
    current: { known: true, live: 0, scheduleToStartMs: null },
    refresh: async () => {
      throw new Error('connection refused');
    },
  });
  // Without the bound the first waits for ever (until the test times out).
  for (const gate of [stuck, failing]) {
    const placed = jest.fn(async () => 'ok');
    await expect(gate.run('order', 'acc', true, placed)).rejects.toMatchObject({ reason: 'no_worker' });
    expect(placed).not.toHaveBeenCalled();
  }
});

test('while accounts place side by side, a step up in load is shared out of the level shown under load, not the idle limit; one account alone takes a burst at the limit', async () => {
  let now = 1_000_000;
  const gate = new PlacementGate(
    { ...settings, initialLimit: 100, maxLimit: 100, accountShare: 0.8, targetMs: 1000 },
    workers,
    () => now,
  );
  const { running, placeEach } = placer(gate);
  // Two windows of a steady load, 20 at once answered in time: the process has shown 21.
  for (let round = 0; round < 2; round++) {
    const steady = held();
    expect(await placeEach(20, 'acc_steady', steady)).toEqual(Array(20).fill(undefined));
    steady.release();
    await Promise.all(running.splice(0));
    now += 1_000;
  }

  // The load steps up while a light account places: the heavy one gets 0.8 of 21, not of 100.
  const light = held();
  const heavy = held();
  expect(await placeEach(2, 'acc_light', light)).toEqual([undefined, undefined]);
  expect(await placeEach(18, 'acc_heavy', heavy)).toEqual([...Array(17).fill(undefined), 'account_share']);
  light.release();
  heavy.release();
  await Promise.all(running.splice(0));

  // Once no other account has placed for a second, one account's burst takes the whole limit.
  now += 3_000;
  const burst = held();
  expect(await placeEach(50, 'acc_heavy', burst)).toEqual(Array(50).fill(undefined));
  burst.release();
  await Promise.all(running);
});
