import type { Response } from 'express';
import type { Logger } from 'pino';
import type { CsvFile } from '../services/exports/export-queries';

/** Until the client has read what was written, or gone away (the listeners removed either way). */
function drainedOrClosed(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Sends a CSV file as its pieces come, waiting whenever the client reads slower than they come,
 * so memory holds a piece at a time. The first piece is read before anything is sent: a failure
 * there is still an ordinary error answer. A failure later can only cut the answer short (its
 * length or its last chunk missing, so the client sees it broken, never complete); a client that
 * goes away stops the reading.
 */
export async function sendCsv(res: Response, file: CsvFile, logger: Logger): Promise<void> {
  const pieces = file.chunks[Symbol.asyncIterator]();
  let next = await pieces.next();
  let gone = false;
  res.once('close', () => {
    gone = true;
  });
  res.status(200);
  res.setHeader('Content-Type', 'text/csv; charset=utf-8; header=present');
  res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
  res.setHeader('Cache-Control', 'no-store');
  if (file.bytes !== undefined) res.setHeader('Content-Length', String(file.bytes));
  try {
    while (!next.done) {
      if (gone) return void (await pieces.return?.());
      if (!res.write(next.value)) await drainedOrClosed(res);
      next = await pieces.next();
    }
    res.end();
  } catch (err) {
    logger.error({ err, requestId: res.locals.requestId }, 'CSV answer cut short');
    res.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}
