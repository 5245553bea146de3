import { condition, isCancellation, patched } from '@temporalio/workflow';
import type { Mutex } from 'async-mutex';
import { updateFailure } from './update-failure';

/**
 * Runs one placement (or top-up opening) of an update handler under the workflow's mutex, so
 * updates that arrive together take turns. Cancellation passes through; any other failure is
 * noted (`failed`) and becomes the update's failure, never the workflow's; every try is counted.
 */
export function placeExclusively<T>(
  mutex: Mutex,
  place: () => Promise<T>,
  hooks: { failed?: (err: unknown) => void; tried: () => void },
): Promise<T> {
  return mutex.runExclusive(async () => {
    try {
      return await place();
    } catch (err) {
      if (isCancellation(err)) throw err;
      hooks.failed?.(err);
      throw updateFailure(err);
    } finally {
      hooks.tried();
    }
  });
}

/**
 * The patch of runs that await a placement already in flight without a recovery timer (see
 * awaitPlacement's `inFlightPatched`). Its marker replaces 'placement-recovery' in new runs.
 */
export const awaitInFlightPatch = 'placement-in-flight';

/**
 * The patch of runs that follow an order placed after they had settled for none (a placement that
 * arrived while the recovery asked Postgres, and committed after Postgres answered "none"). Older
 * runs completed there and left the order to nobody; the marker is recorded only on that branch.
 */
export const latePlacementPatch = 'late-placement-followed';

/**
 * Waits until the update that started this run (a placement, a top-up opening) has been answered.
 * An update admitted just before a Temporal restart can be lost after its placement committed (the
 * caller's retry is then answered from Postgres): with `recoverAfterSeconds` set and no answer in
 * that time, `recover` asks Postgres whether the placement exists, so this run takes it on. While
 * a placement is still running (`inFlight`: its mutex is held), it will answer, so the wait goes on.
 */
export async function awaitPlacement(opts: {
  answered: () => boolean;
  inFlight: () => boolean;
  recoverAfterSeconds: number | undefined;
  recover: () => Promise<void>;
  /**
   * The run was started under `awaitInFlightPatch`: a placement already in flight (the update
   * that started the run) is awaited with no recovery timer, since it answers or fails and is
   * counted either way; only a run with none in flight arms the timer, and needs no
   * 'placement-recovery' check to do so. The timer was started and cancelled in the same task,
   * so it never reached history, but arming it cost the workflow thread about a quarter of its
   * promise bookkeeping per order (docs/benchmarks.md).
   */
  inFlightPatched?: boolean;
}): Promise<void> {
  const { answered, inFlight, recoverAfterSeconds, recover, inFlightPatched } = opts;
  if (inFlightPatched && inFlight()) {
    await condition(answered);
  } else if (recoverAfterSeconds && (inFlightPatched || patched('placement-recovery'))) {
    while (!(await condition(answered, recoverAfterSeconds * 1000))) {
      if (inFlight()) continue;
      await recover();
      break;
    }
  } else {
    await condition(answered);
  }
}
