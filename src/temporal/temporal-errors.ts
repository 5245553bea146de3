import { isGrpcServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure, NamespaceNotFoundError } from '@temporalio/common';
import { ApiError, isErrorCode } from '../domain/errors';
import { safeText } from '../domain/text';

// Business errors cross Temporal as non-retryable ApplicationFailures whose `type` is the spec's
// error code, and turn back into ApiErrors at the HTTP edge. The message is our own sentence
// (ids in it passed the edge's hygiene rule), made safe and bounded all the same.

export function toApplicationFailure(err: ApiError): ApplicationFailure {
  return ApplicationFailure.create({
    message: safeText(err.message, 500),
    type: err.code,
    nonRetryable: true,
    details: err.details ? [err.details] : [],
  });
}

/** Finds an ApplicationFailure with a spec error code anywhere in a Temporal error's cause chain. */
export function apiErrorFromTemporal(err: unknown): ApiError | undefined {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure && isErrorCode(e.type)) {
      const details = (e.details?.[0] ?? undefined) as Record<string, unknown> | undefined;
      return new ApiError(e.type, e.message, details);
    }
  }
  return undefined;
}

const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_NOT_FOUND = 5;
// What the server answers for its own faults (its persistence out of reach, overload): transient
// for the caller, whose requests are idempotent.
const GRPC_SERVER_FAULTS = new Set([8 /* RESOURCE_EXHAUSTED */, 10 /* ABORTED */, 13 /* INTERNAL */]);

/**
 * The Temporal server could not be reached or did not answer in time (a restart, a network
 * fault, an update no worker accepted before the RPC deadline), or it cannot see our namespace
 * (the production server answers so while its own database is out of reach): retry the same request.
 */
export function isTemporalUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
    if (isGrpcServiceError(e) && (e.code === GRPC_UNAVAILABLE || e.code === GRPC_DEADLINE_EXCEEDED)) return true;
    if (e instanceof NamespaceNotFoundError) return true;
    if (isGrpcServiceError(e) && GRPC_SERVER_FAULTS.has(e.code)) return true;
    // Update-with-start's multi-operation error is a plain Error carrying the gRPC code; its
    // `details` are binary, so the message is what names the namespace.
    const x = e as { code?: unknown; message?: unknown };
    if (x.code === GRPC_NOT_FOUND && typeof x.message === 'string' && /namespace .* not found/i.test(x.message))
      return true;
    if (e instanceof Error && (e.name === 'ConnectionError' || e.name === 'TransportError')) return true;
  }
  return false;
}
