import { Context } from '@temporalio/activity';
import type { Config } from '../src/config';
import type { Orm } from '../src/db/orm';
import type { ExportProgress } from '../src/contracts/exports-contract';
import { expireExport, finishExport, writeNextPage, type ExportSettings } from '../src/services/exports/export-writing';

/**
 * The export workflow's steps: each reads the export's row, locked, and returns counts. Page size
 * and link life are this worker's settings (EXPORT_PAGE_ROWS, EXPORT_LINK_SECONDS).
 */
export function createExportActivities(deps: { orm: Orm; config: Config }) {
  const settings: ExportSettings = {
    pageRows: deps.config.EXPORT_PAGE_ROWS,
    linkSeconds: deps.config.EXPORT_LINK_SECONDS,
    publicBaseUrl: deps.config.publicBaseUrl,
  };
  return {
    /** The next page of the file, in one transaction; heartbeats while Postgres reads it. */
    async writeExportPage(exportId: string): Promise<ExportProgress> {
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), 1000);
      try {
        return await writeNextPage(deps.orm.em.fork(), exportId, settings);
      } finally {
        clearInterval(beat);
      }
    },

    async finishExport(exportId: string): Promise<ExportProgress> {
      return finishExport(deps.orm.em.fork(), exportId, settings);
    },

    async expireExport(exportId: string): Promise<void> {
      await expireExport(deps.orm.em.fork(), exportId);
    },
  };
}

export type ExportActivities = ReturnType<typeof createExportActivities>;
