import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../codes';
import { deleteCodeBatch, insertCodeBatch } from '../../db/support-store';
import { ApiError } from '../../domain/errors';

// Codes as parameters of SQL: support's hand-obtained codes, checked and staged for the
// procurement workflow's deliver step, and the guard that keeps codes out of driver errors.

export const MAX_MANUAL_CODE_LENGTH = 255;

/**
 * Runs a statement whose parameters are codes. A driver error quotes the statement with its
 * parameters, so it is replaced by one that names only the step and the SQLSTATE: codes are
 * secrets and never reach a log.
 */
export async function withCodes<T>(step: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const sqlState = (err as { code?: unknown }).code;
    // The driver's error is left out on purpose: its message quotes the codes.
    // eslint-disable-next-line preserve-caught-error
    throw new Error(`${step} failed (${typeof sqlState === 'string' ? `SQLSTATE ${sqlState}` : 'database error'})`);
  }
}

/** Trims and checks codes typed or pasted by support: non-empty, unique, of a sane length. */
export function cleanManualCodes(codes: string[]): string[] {
  const cleaned = codes.map((c) => c.trim());
  if (cleaned.some((c) => c.length === 0 || c.length > MAX_MANUAL_CODE_LENGTH)) {
    throw new ApiError('invalid_input', `Every code must be 1 to ${MAX_MANUAL_CODE_LENGTH} characters`);
  }
  if (new Set(cleaned).size !== cleaned.length)
    throw new ApiError('invalid_input', 'The same code is given more than once');
  return cleaned;
}

/** Stages codes obtained by hand for an order's deliver step; returns the batch id the workflow is sent. */
export async function stageManualCodes(em: EntityManager, orderId: string, codes: string[]): Promise<string> {
  const batchId = newId('mcb');
  await withCodes('staging codes', () => insertCodeBatch(em, batchId, orderId, cleanManualCodes(codes)));
  return batchId;
}

/** A staged batch that was delivered (already gone) or refused. */
export async function dropManualCodes(em: EntityManager, batchId: string): Promise<void> {
  await deleteCodeBatch(em, batchId);
}
