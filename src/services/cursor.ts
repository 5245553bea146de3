import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../domain/errors';

// Cursors are opaque to callers: a signed position bound to the account and the list's filters,
// so a forged, edited or foreign cursor is `invalid_cursor` instead of a silent wrong page.
const MAX_AGE_MS = 24 * 60 * 60 * 1000;

export interface CursorScope {
  secret: string;
  accountId: string;
  list: string;
  filters: Record<string, unknown>;
}

function scopeKey(scope: CursorScope): string {
  return JSON.stringify([scope.accountId, scope.list, scope.filters]);
}

function sign(scope: CursorScope, body: string): Buffer {
  return createHmac('sha256', scope.secret).update(scopeKey(scope)).update('\0').update(body).digest().subarray(0, 16);
}

export function encodeCursor(scope: CursorScope, position: string | number): string {
  const body = Buffer.from(JSON.stringify({ p: position, t: Date.now() })).toString('base64url');
  return `${body}.${sign(scope, body).toString('base64url')}`;
}

/** A keyset position that is a positive row number (orders, ledger rows). */
export const rowNumberPosition = (p: unknown): number | undefined =>
  Number.isSafeInteger(p) && (p as number) > 0 ? (p as number) : undefined;

/**
 * The position a cursor carries, checked by `parsePosition` for this list: a cursor that is
 * forged, edited, foreign, expired, or signed but holding a position that is not valid for the
 * list is `invalid_cursor`, never a database error.
 */
export function decodeCursor<T>(scope: CursorScope, cursor: string, parsePosition: (p: unknown) => T | undefined): T {
  const invalid = () => new ApiError('invalid_cursor', 'Invalid or expired cursor; restart from the first page');
  const [body, mac, extra] = cursor.split('.');
  if (!body || !mac || extra !== undefined) throw invalid();
  const expected = sign(scope, body);
  // Node's base64url decoding skips characters outside the alphabet and a last character's unused
  // bits, so several texts decode to one MAC: only the one this server issued is taken.
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || given.toString('base64url') !== mac || !timingSafeEqual(given, expected))
    throw invalid();
  let parsed: { p?: unknown; t?: unknown } | null;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (
    parsed === null ||
    typeof parsed !== 'object' ||
    typeof parsed.t !== 'number' ||
    Date.now() - parsed.t > MAX_AGE_MS
  )
    throw invalid();
  const position = parsePosition(parsed.p);
  if (position === undefined) throw invalid();
  return position;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Fetches `limit + 1` rows to learn whether another page exists. */
export function pageOf<R, T>(
  rows: R[],
  limit: number,
  map: (r: R) => T,
  position: (r: R) => string | number,
  scope: CursorScope,
): Page<T> {
  const hasMore = rows.length > limit;
  const items = rows.slice(0, limit);
  return {
    items: items.map(map),
    hasMore,
    nextCursor: hasMore ? encodeCursor(scope, position(items[items.length - 1])) : null,
  };
}
