import { PlacementGate, PlacementRefused } from '../../src/services/admission';

// A key whose account already holds its share while another account places is refused before the
// key is read (refuseEarly with the key's digest), once the gate has seen which account it is.
const settings = {
  enabled: true,
  targetMs: 600_000,
  initialLimit: 4,
  maxLimit: 4,
  accountShare: 0.5,
  workerQueueTargetMs: 500,
};
const workers = () => ({ known: true, live: 1, scheduleToStartMs: null });

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

test('with admission control off, nothing is remembered or refused', () => {
  const gate = new PlacementGate({ ...settings, enabled: false }, workers);
  gate.remember('digest', 'acc');
  expect(refusal(() => gate.refuseEarly('order', 'digest'))).toBeUndefined();
});
