import { condition, patched } from '@temporalio/workflow';

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
