// An empty workflow with the same shape as the order workflow's placement (an update answered
// through update-with-start), to measure Temporal's own round trip.
import { condition, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export const benchUpdate = defineUpdate<string, [string]>('bench');

export async function benchWorkflow(): Promise<void> {
  let done = false;
  setHandler(benchUpdate, (x: string) => {
    done = true;
    return x;
  });
  await condition(() => done);
}

const { benchNoop } = proxyLocalActivities<{ benchNoop(x: string): Promise<string> }>({
  startToCloseTimeout: '10 seconds',
});

/** The same, with the update answered through a no-op local activity: the order workflow's shape, bare. */
export async function benchLocalActivityWorkflow(): Promise<void> {
  let done = false;
  setHandler(benchUpdate, async (x: string) => {
    const y = await benchNoop(x);
    done = true;
    return y;
  });
  await condition(() => done);
}
