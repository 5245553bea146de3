// What a worker hands its workflows in place of a payload that no key of the service's ring
// encrypted: a message (a workflow input, a signal, an update) sent to the cluster by anyone but
// the service. Workflow-safe: the codec (src/temporal/codec.ts) makes it, workflows/interceptors.ts
// refuses every message that carries it.

export const REFUSED_MARK = '$refusedPayload';

/** The value the refused payload decodes to. */
export const refusedValue = () => ({ [REFUSED_MARK]: 'not encrypted with a key of TEMPORAL_PAYLOAD_KEYS' });

export function isRefused(value: unknown): boolean {
  return typeof value === 'object' && value !== null && REFUSED_MARK in value;
}
