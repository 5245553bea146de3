import type { Next, WorkflowInboundCallsInterceptor, WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { sanitizeError as sanitize } from '../src/domain/text';

// Whatever a workflow, an update handler or its validator throws leaves the sandbox with a
// message and stack Temporal's core can encode (see src/temporal/safe-failures.ts for activities).
// The error is cleaned in place and rethrown as the same object, so a cancellation stays a
// cancellation (and the SDK's own control errors, such as continue-as-new, keep their type).

async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw sanitize(err);
  }
}

class SafeFailures implements WorkflowInboundCallsInterceptor {
  execute: WorkflowInboundCallsInterceptor['execute'] = (input, next) => guarded(() => next(input));
  handleUpdate: WorkflowInboundCallsInterceptor['handleUpdate'] = (input, next) => guarded(() => next(input));
  handleSignal: WorkflowInboundCallsInterceptor['handleSignal'] = (input, next) => guarded(() => next(input));
  validateUpdate(input: Parameters<Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>>[0], next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>): void {
    try {
      next(input);
    } catch (err) {
      throw sanitize(err);
    }
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ inbound: [new SafeFailures()] });
