import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestHandler } from 'express';
import { ApiError, errorBody } from '../domain/errors';
import { findInputProblem, isCleanId, isCleanText, PROBLEM_MESSAGE, safeText } from '../domain/text';
import { newRequestId } from './middleware';
import { z } from './openapi';

// The edge's one hygiene rule (src/domain/text.ts), in two forms: string schemas that every
// request schema builds its strings from, and one check of a whole request (every string, every
// key, any depth) that each surface runs before its schema, so even `unknown`-typed values
// (redeemInfo) and field names are covered.

const ID_MESSAGE = 'must be well-formed text without control characters';
const TEXT_MESSAGE = 'must be well-formed text without NUL or control characters other than tab and newline';

/** An id, code, key or URL: 1..max characters, well-formed, no control characters. */
export const IdString = (max: number) => z.string().min(1).max(max).refine(isCleanId, { message: ID_MESSAGE });

/** Free text (reasons, notes, redeem details): well-formed, may keep tab and newline, never NUL. */
export const FreeText = (max: number) => z.string().max(max).refine(isCleanText, { message: TEXT_MESSAGE });

/**
 * Refuses a request holding a malformed string, a forbidden key or too deep a value anywhere in
 * `parts` (named by where they came from: body, query, params, header), with `400 invalid_input`
 * and the offending path in `details.field`; the value itself is never echoed.
 */
export function assertCleanInput(parts: Record<string, unknown>, opts: { ids?: boolean } = {}): void {
  for (const [name, value] of Object.entries(parts)) {
    const problem = findInputProblem(value, name, opts);
    if (problem) {
      // The same details shape as a schema failure; the path names where the value came from.
      const path = safeText(problem.path, 200);
      const message = PROBLEM_MESSAGE[problem.reason];
      throw new ApiError('invalid_input', `${path} ${message}`, { issues: [{ path, message }] });
    }
  }
}

/**
 * Every request, on every surface: its path segments and query values are ids (no control
 * characters, well-formed after percent-decoding). Bodies are checked where each surface parses
 * them (addRoute, MCP, the pages, the payment callback).
 */
export const cleanRequest: RequestHandler = (req, _res, next) => {
  const segments = req.path
    .split('/')
    .filter(Boolean)
    .map((s) => percentDecoded(s, 'path'));
  // The query parser quietly turns bytes that are not UTF-8 into U+FFFD; they are refused instead.
  const rawQuery = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
  for (const part of rawQuery.split(/[&=]/)) percentDecoded(part.replace(/\+/g, ' '), 'query');
  assertCleanInput({ path: segments, query: req.query }, { ids: true });
  next();
};

function percentDecoded(s: string, field: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    const message = 'is not valid percent-encoded UTF-8';
    throw new ApiError('invalid_input', `The ${field} ${message}`, { issues: [{ path: field, message }] });
  }
}

/**
 * A request Node's HTTP parser refuses (a NUL or control character in a header, a broken
 * request line, oversized headers) never reaches Express; it still gets the spec's error body
 * with a request id, instead of Node's bare 400.
 */
export function answerMalformedHttp(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const id = newRequestId();
    const body = JSON.stringify(errorBody(new ApiError('invalid_input', 'Malformed HTTP request'), id));
    socket.end(
      'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
