import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../codes';
import type { ExportKind } from '../../contracts/exports-contract';
import { insertExport } from '../../db/exports-store';
import { ApiError } from '../../domain/errors';
import type { TemporalHandle } from '../../temporal/client';
import { ensureStarted, exportStarter } from '../../temporal/starters';
import { exportWindow } from './export-csv';
import { exportView, type ExportView, type LinkSigner } from './export-queries';

// POST /exports and the account area's "Prepare a file": an export job for a date range of any
// size. Its row is written first (with the range's key window, so later rows do not join it), then
// its workflow is started; the same externalExportId is the same export, so a retry after a lost
// answer, or after Temporal was out of reach, starts the workflow of the export already recorded.

export interface ExportRequest {
  accountId: string;
  externalExportId: string;
  kind: ExportKind;
  from: Date;
  to: Date;
}

export async function submitExport(
  deps: { em: EntityManager; temporal: TemporalHandle; signer: LinkSigner },
  req: ExportRequest,
): Promise<ExportView & { reused: boolean }> {
  const window = await exportWindow(deps.em, req.kind, req);
  const { row, created } = await insertExport(deps.em, { id: newId('exp'), ...req, window });
  const view = exportView(row, deps.signer);
  if (
    !created &&
    (row.kind !== req.kind ||
      new Date(row.range_from).getTime() !== req.from.getTime() ||
      new Date(row.range_to).getTime() !== req.to.getTime())
  ) {
    throw new ApiError(
      'idempotency_conflict',
      'This externalExportId was used with a different kind or range; use a new id',
      { kind: view.kind, from: view.from, to: view.to },
    );
  }
  if (row.status === 'running')
    await ensureStarted(exportStarter(deps.temporal, { exportId: row.id, accountId: req.accountId }));
  return { ...view, reused: !created };
}
