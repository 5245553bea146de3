import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../codes';
import type { Config } from '../../config';
import { insertBatch, type BatchLineInput } from '../../db/batches-store';
import { ApiError } from '../../domain/errors';
import type { TemporalHandle } from '../../temporal/client';
import { batchStarter, ensureStarted } from '../../temporal/starters';
import { batchView, type BatchView } from './batch-queries';

// POST /batches and the account area's upload: a batch is accepted at once (its lines stored as
// posted, in one statement) and its workflow started; placing the lines is the workflow's. The
// same externalBatchId is the same batch: resubmitted with the same lines it answers with the
// batch as it stands (and starts its workflow if an earlier try could not), with other lines it
// is an idempotency_conflict.

/** The lines as posted, in order: what makes a resubmission the same batch. */
const linesHash = (lines: BatchLineInput[]) =>
  createHash('sha256')
    .update(JSON.stringify(lines.map((l) => [l.externalOrderId, l.productId, l.qty, l.expectedUnitPrice ?? null])))
    .digest('hex');

export async function submitBatch(
  deps: { em: EntityManager; temporal: TemporalHandle; config: Pick<Config, 'BATCH_CHUNK_LINES' | 'publicBaseUrl'> },
  req: { accountId: string; externalBatchId: string; lines: BatchLineInput[] },
): Promise<BatchView & { reused: boolean }> {
  const hash = linesHash(req.lines);
  const { row, created } = await insertBatch(deps.em, {
    id: newId('bat'),
    accountId: req.accountId,
    externalBatchId: req.externalBatchId,
    linesHash: hash,
    lines: req.lines,
  });
  if (!created && row.lines_hash !== hash) {
    throw new ApiError('idempotency_conflict', 'This externalBatchId was used with other lines; use a new id', {
      batchId: row.id,
      total: row.total,
    });
  }
  if (row.status === 'running')
    await ensureStarted(batchStarter(deps.temporal, deps.config, { batchId: row.id, accountId: req.accountId }));
  return { ...(await batchView(deps.em, row)), reused: !created };
}
