import { chainScanWorkflowId, type ChainScanTick } from '../../src/contracts/evm-checkouts-contract';
import { timersOf, uniqueId, workflowEnv, type WorkflowEnv } from './env';

// chainScanWorkflow with a stubbed tick (issue 38): it ticks at the cadence the workers' tick
// reports, goes on after a tick that failed, and ends once its chain is no longer configured.
let env: WorkflowEnv;
beforeAll(async () => {
  env = await workflowEnv();
}, 120_000);
afterAll(() => env?.close());

const tick = (over: Partial<ChainScanTick> = {}): ChainScanTick => ({
  checkouts: 3,
  woken: 0,
  available: true,
  nextInSeconds: 1,
  retired: false,
  ...over,
});

test('ticks at the cadence the tick reports, and ends once its chain is retired', async () => {
  const q = env.taskQueue();
  const chains: number[] = [];
  const workflowId = chainScanWorkflowId(uniqueId('q'), 31337);
  await env.withWorker(
    q,
    {
      scanEvmChain: async (chainId: number) => {
        chains.push(chainId);
        return tick({ nextInSeconds: chains.length, retired: chains.length === 3 });
      },
    },
    () => env.client.workflow.execute('chainScanWorkflow', { workflowId, taskQueue: q, args: [{ chainId: 31337 }] }),
  );
  expect(chains).toEqual([31337, 31337, 31337]);
  expect(await timersOf(env.client.workflow.getHandle(workflowId))).toEqual([1000, 2000]);
}, 60_000);
