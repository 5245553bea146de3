// An empty workflow with the same shape as the order workflow's placement (an update answered
// through update-with-start), to measure Temporal's own round trip.
import { condition, defineUpdate, setHandler } from '@temporalio/workflow';

export const benchUpdate = defineUpdate<string, [string]>('bench');

export async function benchWorkflow(): Promise<void> {
  let done = false;
  setHandler(benchUpdate, (x: string) => {
    done = true;
    return x;
  });
  await condition(() => done);
}
