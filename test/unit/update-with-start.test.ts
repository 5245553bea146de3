import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { defineUpdate } from '@temporalio/workflow';
import type { TemporalHandle } from '../../src/temporal/client';
import { WorkflowStarter } from '../../src/temporal/starters';

// The update-with-start loop's choice between sending the same update again and giving up, on
// the failures the server answers with. (The topology suite meets the server's "unprocessed"
// rejection for real, now and then, under concurrent replays across two workers.)

const update = defineUpdate<string, [string]>('u');
const plan = {
  workflowId: 'w:1',
  args: [],
  workflowIdConflictPolicy: 'USE_EXISTING' as const,
  workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
};

/** A handle whose client answers each call with the next of `answers` (an Error is thrown). */
function handle(answers: (string | Error)[]) {
  const sent: string[] = [];
  const executeUpdateWithStart = async (_u: unknown, opts: { updateId?: string }) => {
    sent.push(opts.updateId ?? '');
    const a = answers.shift();
    if (a instanceof Error) throw a;
    return a;
  };
  const temporal = {
    client: { workflow: { executeUpdateWithStart } },
    placementDeadlineMs: 1000,
  } as unknown as TemporalHandle;
  return { temporal, sent };
}

const serverRejection = (type: string) =>
  new WorkflowUpdateFailedError(
    'Workflow Update failed',
    ApplicationFailure.create({ message: 'rejected by the server', type, nonRetryable: true }),
  );

test('an update the server rejected as processed by no worker is sent again with the same id', async () => {
  const { temporal, sent } = handle([serverRejection('UnprocessedUpdate'), 'placed']);
  await expect(
    new WorkflowStarter(temporal, 'w', plan).updateWithStart(update, {
      args: ['x'],
      updateId: 'req-1',
      attempts: 3,
      withDeadline: false,
    }),
  ).resolves.toBe('placed');
  expect(sent).toEqual(['req-1', 'req-1']);
});

test('it is sent at most `attempts` times, then given up like any failure', async () => {
  const { temporal, sent } = handle([serverRejection('UnprocessedUpdate'), serverRejection('UnprocessedUpdate')]);
  const onGiveUp = jest.fn(() => undefined);
  await expect(
    new WorkflowStarter(temporal, 'w', plan).updateWithStart(update, {
      args: ['x'],
      updateId: 'req-2',
      attempts: 2,
      withDeadline: false,
      onGiveUp,
    }),
  ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
  expect(sent).toHaveLength(2);
  expect(onGiveUp).toHaveBeenCalledTimes(1);
});

test('any other update failure is not sent again', async () => {
  const { temporal, sent } = handle([serverRejection('SomethingElse'), 'placed']);
  await expect(
    new WorkflowStarter(temporal, 'w', plan).updateWithStart(update, {
      args: ['x'],
      updateId: 'req-3',
      attempts: 3,
      withDeadline: false,
    }),
  ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
  expect(sent).toEqual(['req-3']);
});
