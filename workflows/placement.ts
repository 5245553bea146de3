import { condition, isCancellation, patched } from '@temporalio/workflow';
import type { Mutex } from 'async-mutex';
import { updateFailure } from './update-failure';

/**
 * Runs one placement (or top-up opening) of an update handler under the workflow's mutex, so
 * updates that arrive together take turns. Cancellation passes through; any other failure is
 * noted (`failed`) and becomes the update's failure, never the workflow's; every try is counted.
 */
export function placeExclusively<T>(mutex: Mutex, place: () => Promise<T>, hooks: { failed?: (err: unknown) => void; tried: () => void }): Promise<T> {
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
}): Promise<void> {
  const { answered, inFlight, recoverAfterSeconds, recover } = opts;
  if (recoverAfterSeconds && patched('placement-recovery')) {
    while (!(await condition(answered, recoverAfterSeconds * 1000))) {
      if (inFlight()) continue;
      await recover();
      break;
    }
  } else {
    await condition(answered);
  }
}
