import {
  ApplicationFailure,
  log,
  type Next,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
} from '@temporalio/workflow';
import { isRefused } from '../src/contracts/refused-payload';
import { sanitizeError as sanitize } from '../src/domain/text';

type ValidateInput = Parameters<Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>>[0];
type Validate = Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>;

async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw sanitize(err);
  }
}

/**
 * Whatever a workflow, an update handler or its validator throws leaves the sandbox with a
 * message and stack Temporal's core can encode (see src/temporal/safe-failures.ts for activities).
 * The error is cleaned in place and rethrown as the same object, so a cancellation stays a
 * cancellation (and the SDK's own control errors, such as continue-as-new, keep their type).
 */
class SafeFailures implements WorkflowInboundCallsInterceptor {
  execute: WorkflowInboundCallsInterceptor['execute'] = (input, next) => guarded(() => next(input));
  handleUpdate: WorkflowInboundCallsInterceptor['handleUpdate'] = (input, next) => guarded(() => next(input));
  handleSignal: WorkflowInboundCallsInterceptor['handleSignal'] = (input, next) => guarded(() => next(input));
  validateUpdate(input: ValidateInput, next: Validate): void {
    try {
      next(input);
    } catch (err) {
      throw sanitize(err);
    }
  }
}

const refusal = (what: string) =>
  ApplicationFailure.nonRetryable(
    `${what} refused: it was not encrypted with a key of TEMPORAL_PAYLOAD_KEYS`,
    'unencrypted_message',
  );

/**
 * No message reaches a workflow unless the service sent it: an input, signal or update that no
 * key of the service's ring encrypted arrives as the refused value (the worker's codec) and is
 * refused before any handler sees it. A start fails, an update is rejected, a signal is dropped
 * (failing the task instead would leave the workflow stuck on it).
 */
class ServiceMessagesOnly implements WorkflowInboundCallsInterceptor {
  execute: WorkflowInboundCallsInterceptor['execute'] = (input, next) => {
    if (input.args.some(isRefused)) throw refusal('The workflow input');
    return next(input);
  };

  handleUpdate: WorkflowInboundCallsInterceptor['handleUpdate'] = (input, next) => {
    if (input.args.some(isRefused)) throw refusal(`Update ${input.name}`);
    return next(input);
  };

  handleSignal: WorkflowInboundCallsInterceptor['handleSignal'] = async (input, next) => {
    if (!input.args.some(isRefused)) return next(input);
    log.warn('signal refused: not encrypted with a key of TEMPORAL_PAYLOAD_KEYS', { signalName: input.signalName });
  };

  validateUpdate(input: ValidateInput, next: Validate): void {
    if (input.args.some(isRefused)) throw refusal(`Update ${input.name}`);
    next(input);
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new SafeFailures(), new ServiceMessagesOnly()],
});
