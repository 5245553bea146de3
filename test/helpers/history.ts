import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { EncryptionCodec, parseKeyRing } from '../../src/temporal/codec';

// Reading workflow histories in tests. The server holds every payload encrypted (issue 12); a
// history fetched with a client is exactly what the server stores, so tests read it two ways:
// raw (what anyone with the Temporal database or an unauthenticated UI sees) and decoded through
// the service's codec (what an operator sees through the codec server).

type History = temporal.api.history.v1.IHistory;

/** The history as the server stores it. */
export async function rawHistory(client: Client, workflowId: string, runId?: string): Promise<History> {
  return client.workflow.getHandle(workflowId, runId).fetchHistory();
}

/**
 * Every payload anywhere in `history` (inputs, results, update outcomes, failures, markers, ...).
 * `except` names fields whose payloads are left out (e.g. `searchAttributes`, plain by design).
 */
export function payloadsOf(history: unknown, opts: { except?: string[] } = {}): Payload[] {
  const found: Payload[] = [];
  const skip = new Set(opts.except ?? []);
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    if (v instanceof Uint8Array) return;
    if (Array.isArray(v)) return v.forEach(walk);
    const o = v as Record<string, unknown>;
    if (o.metadata && typeof o.metadata === 'object' && 'data' in o) found.push(o as Payload);
    for (const [k, child] of Object.entries(o)) if (!skip.has(k)) walk(child);
  };
  walk(history);
  return found;
}

/** The search attributes set anywhere in `history` (at start, upserted, on children), by name. */
export function searchAttributePayloadsOf(history: unknown): Map<string, Payload[]> {
  const byName = new Map<string, Payload[]>();
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return;
    if (Array.isArray(v)) return v.forEach(walk);
    const o = v as Record<string, unknown>;
    const fields = (o.searchAttributes as { indexedFields?: Record<string, Payload> } | undefined)?.indexedFields;
    for (const [name, p] of Object.entries(fields ?? {})) byName.set(name, [...(byName.get(name) ?? []), p]);
    Object.values(o).forEach(walk);
  };
  walk(history);
  return byName;
}

/** The payload's `encoding` metadata as text. */
export const encodingOf = (p: Payload) =>
  p.metadata?.encoding ? Buffer.from(p.metadata.encoding).toString('utf8') : undefined;

/** The history with every payload decoded in place by the codec with `keys` (TEMPORAL_PAYLOAD_KEYS). */
export async function decodeHistory(history: History, keys: string): Promise<History> {
  const codec = new EncryptionCodec(parseKeyRing(keys));
  for (const p of payloadsOf(history)) {
    const [decoded] = await codec.decode([p]);
    if (decoded !== p) {
      p.metadata = decoded.metadata;
      p.data = decoded.data;
    }
  }
  return history;
}

/** The history as text, payload bytes as UTF-8: what a search for a secret looks through. */
export function historyAsText(history: History): string {
  return JSON.stringify(history, (key, value) => {
    if (key === 'data' && typeof value === 'string') return Buffer.from(value, 'base64').toString('utf8');
    if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
    return value;
  });
}

/** The decoded history of `workflowId` (its latest run, or `runId`) as text (what an operator reads through the codec server). */
export async function decodedHistoryText(
  client: Client,
  keys: string,
  workflowId: string,
  runId?: string,
): Promise<string> {
  return historyAsText(await decodeHistory(await rawHistory(client, workflowId, runId), keys));
}
