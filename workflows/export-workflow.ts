import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ExportActivities } from '../activities/exports-activities';
import {
  DEFAULT_PAGES_PER_RUN,
  type ExportProgress,
  type ExportWorkflowInput,
} from '../src/contracts/exports-contract';
import { untilPostgresAnswers } from './activity-options';

// Each step is a Postgres transaction that reads where the export stands from its row: retried
// until the database answers. A page heartbeats, so a page lost with its worker is written again
// within seconds (from the last page committed), not after the whole start-to-close.
const { writeExportPage } = proxyActivities<ExportActivities>({
  ...untilPostgresAnswers,
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
});
const { finishExport, expireExport } = proxyActivities<ExportActivities>(untilPostgresAnswers);

/**
 * One export job, keyed by `export:<exportId>`: its CSV file written into Postgres one page per
 * activity, then ready (the `export.ready` event goes out with it) and downloadable until its
 * link expires, when the file is deleted. A run continues as new after `pagesPerRun` pages, so a
 * large range never grows one history without end. History holds counts, never rows or links.
 */
export async function exportWorkflow(input: ExportWorkflowInput): Promise<ExportProgress> {
  const pagesPerRun = input.pagesPerRun ?? DEFAULT_PAGES_PER_RUN;
  let progress = await writeExportPage(input.exportId);
  for (let pages = 1; progress.status === 'running' && !progress.written; pages++) {
    if (pages >= pagesPerRun || workflowInfo().continueAsNewSuggested)
      await continueAsNew<typeof exportWorkflow>(input);
    progress = await writeExportPage(input.exportId);
  }
  if (progress.status === 'running') progress = await finishExport(input.exportId);
  if (progress.status === 'ready') {
    // The file stays for the link's life (EXPORT_LINK_SECONDS, counted from when it was ready).
    await sleep(Math.max(1, (progress.expiresAt ?? Date.now()) - Date.now()));
    await expireExport(input.exportId);
    progress = { ...progress, status: 'expired' };
  }
  return progress;
}
