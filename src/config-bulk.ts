import { z } from 'zod';

// The settings of CSV exports and order batches, kept beside config.ts (whose schema spreads them
// in) so that file stays one screenful per concern.
const count = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

export const bulkSettings = {
  // A streamed export (GET /exports/orders.csv, ledger.csv) serves at most this many rows; a
  // larger range is an export job (POST /exports), written in pages by a workflow.
  EXPORT_STREAM_MAX_ROWS: count(10_000, 1, 1_000_000),
  // Rows per page: of a streamed export, and of a job's file as Postgres keeps it.
  EXPORT_PAGE_ROWS: count(2_000, 1, 50_000),
  // How long a job's download link works (and its file is kept) once the file is ready.
  EXPORT_LINK_SECONDS: count(86_400, 1, 30 * 86_400),
  // Lines of a batch placed per activity (one heartbeat per line).
  BATCH_CHUNK_LINES: count(100, 1, 5_000),
};
