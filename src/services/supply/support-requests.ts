import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../codes';
import {
  closeSupportRequest,
  insertSupportRequest,
  lockSupportRequest,
  markSupportRequestApplied,
  type SupportRequestRow,
} from '../../db/support-store';
import { ApiError } from '../../domain/errors';
import { supportActionsUnverified } from '../../metrics/registry';

// A support action that moves money or codes (refund, manual delivery, resume, an operator's
// decision) is a row in Postgres, written with the person and the reason before the workflow is
// told; the workflow's activity acts on that row, once, in the transaction that moves the money.
// A message naming no such row (sent to Temporal by anyone else) is refused and counted.

/** Records what support asks for; its id is what the workflow is sent. */
export async function requestSupportAction(
  em: EntityManager,
  r: { subjectId: string; action: string; actor: string; reason: string; batchId?: string | null },
): Promise<string> {
  const id = newId('sreq');
  await insertSupportRequest(em, { id, ...r });
  return id;
}

/**
 * The request behind a support message, taken for this transaction: marked applied when the
 * transaction commits. Refused (invalid_input, counted) when there is none for this subject and
 * action, or it was already applied or closed.
 */
export async function takeSupportRequest(
  em: EntityManager,
  requestId: string | undefined,
  subjectId: string,
  action: string,
): Promise<SupportRequestRow> {
  const row =
    typeof requestId === 'string' && requestId ? await lockSupportRequest(em, requestId, subjectId, action) : undefined;
  if (!row || row.applied_at || row.closed_at) {
    supportActionsUnverified.inc({ action });
    throw new ApiError('invalid_input', `No open support request on record for this ${action}; nothing was done`);
  }
  await markSupportRequestApplied(em, row.id);
  return row;
}

/**
 * Sends a recorded request to its workflow; when the workflow refuses it (a business error), the
 * request is closed so that its message, kept in the workflow's history, cannot act later.
 */
export async function carryOutSupportRequest<T>(
  em: EntityManager,
  requestId: string,
  send: () => Promise<T>,
): Promise<T> {
  try {
    return await send();
  } catch (err) {
    if (err instanceof ApiError) await closeSupportRequest(em, requestId);
    throw err;
  }
}
