// The export lifecycle's shared contract: its workflow id, input and what its steps report.
// Workflow-safe (no Node modules): imported by the workflow, its activities and the starter.
// Steps carry ids and counts only: the rows, the file and its download link stay in Postgres
// and at the edge (the link is derived there from a secret the worker never holds).

export type ExportKind = 'orders' | 'ledger';

export const EXPORT_KINDS: readonly ExportKind[] = ['orders', 'ledger'];

/** One workflow per export, named by our id. */
export const exportWorkflowId = (exportId: string) => `export:${exportId}`;

export interface ExportWorkflowInput {
  exportId: string;
  /** Pages per run before it continues as new (bounded history); DEFAULT_PAGES_PER_RUN when unset. */
  pagesPerRun?: number;
}

export const DEFAULT_PAGES_PER_RUN = 100;

export type ExportStatus = 'running' | 'ready' | 'expired';

/** Where an export stands in Postgres after a step. */
export interface ExportProgress {
  status: ExportStatus;
  rows: number;
  pages: number;
  /** Every page is written: the next step is `finishExport`. */
  written: boolean;
  /** Unix ms when the link and the file expire (once ready). */
  expiresAt: number | null;
}
