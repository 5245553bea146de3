import type { EntityManager } from '@mikro-orm/postgresql';
import type { BatchChunkResult, BatchWorkflowResult } from '../../contracts/batches-contract';
import {
  findBatch,
  lineCounts,
  markBatchCompleted,
  pendingLines,
  procurementsToHandOff,
  recordLineOutcome,
  type LineOutcome,
  type PendingLine,
} from '../../db/batches-store';
import { ApiError } from '../../domain/errors';
import { safeText } from '../../domain/text';
import { batchLines, codeLabel } from '../../metrics/registry';
import { recordEvent } from '../webhooks/events';
import { placeOrder, type OrderSettings } from './order-placement';

// The worker's side of a batch: its lines placed one after another, in line order, each by the
// placement service the order workflow's own placement runs (src/services/orders/order-placement.ts),
// with the same idempotency keys: the line's externalOrderId (the unique key of the account's
// orders) and a placementId of its own. So a line's outcome is the one a single POST /orders of
// it would get at that moment, sent after the lines before it: a repeated externalOrderId is a
// replay of the first (`reused`, nothing charged twice) or an idempotency_conflict, a line the
// balance no longer covers is insufficient_balance while a later, cheaper one may still pass.

/** The request that places a line: its own retries (a worker lost mid-line) are told `reused: false`, like an API request's. */
export const linePlacementId = (batchId: string, line: number) => `batch:${batchId}:${line}`;

async function placeLine(
  em: EntityManager,
  accountId: string,
  batchId: string,
  l: PendingLine,
  settings: OrderSettings,
): Promise<LineOutcome> {
  try {
    const { order, reused } = await placeOrder(
      em.fork(),
      {
        accountId,
        externalOrderId: l.external_order_id,
        productId: l.product_id,
        qty: l.qty,
        payment: 'balance',
        ...(l.expected_unit_price === null ? {} : { expectedUnitPrice: l.expected_unit_price }),
        // Lines come in through the REST API (or the account area's upload), as single orders do.
        source: 'rest',
        placementId: linePlacementId(batchId, l.line),
      },
      settings,
    );
    return { status: 'placed', orderId: order.id, reused };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return {
      status: 'rejected',
      code: err.code,
      message: safeText(err.message, 500),
      ...(err.details ? { details: err.details } : {}),
    };
  }
}

/**
 * Places the lines of [from, to) that have no outcome yet, one at a time, recording each outcome
 * as it comes. A chunk retried after its worker was
 * lost skips the lines decided and places the one that was in flight again under its own
 * placementId, which finds its order if it was placed. Returns the paid direct-code orders of the
 * whole chunk (those placed by an earlier try too), for their procurement to be handed off.
 */
export async function placeChunk(
  em: EntityManager,
  batchId: string,
  range: { from: number; to: number },
  settings: OrderSettings,
): Promise<BatchChunkResult> {
  const batch = await findBatch(em, { id: batchId });
  if (!batch) throw new Error(`batch ${batchId} is not in Postgres`);
  for (const line of await pendingLines(em, batchId, range.from, range.to)) {
    const outcome = await placeLine(em, batch.account_id, batchId, line, settings);
    await recordLineOutcome(em, batchId, line.line, outcome);
    batchLines.inc(
      outcome.status === 'placed'
        ? { outcome: outcome.reused ? 'reused' : 'placed', code: '' }
        : { outcome: 'rejected', code: codeLabel(outcome.code) },
    );
  }
  const counts = await lineCounts(em, batchId);
  const handOffs = await procurementsToHandOff(em, batchId, range.from, range.to);
  return {
    total: batch.total,
    decided: counts.placed + counts.rejected,
    handOffs: handOffs.map((h) => ({
      orderId: h.order_id,
      accountId: h.account_id,
      externalOrderId: h.external_order_id,
    })),
  };
}

/** running → completed, with `batch.completed` in the outbox in the same transaction (once). */
export async function completeBatch(em: EntityManager, batchId: string): Promise<BatchWorkflowResult> {
  return em.transactional(async (tx) => {
    const counts = await lineCounts(tx, batchId);
    const done = await markBatchCompleted(tx, batchId);
    if (done) {
      await recordEvent(tx, done.account_id, 'batch.completed', {
        batchId,
        externalBatchId: done.external_batch_id,
        total: done.total,
        placed: counts.placed,
        rejected: counts.rejected,
      });
    }
    return {
      batchId,
      total: counts.placed + counts.rejected + counts.pending,
      placed: counts.placed,
      rejected: counts.rejected,
    };
  });
}
