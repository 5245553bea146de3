// The input hygiene rule (one rule for every surface: REST, MCP, pages, admin, callbacks).
// Pure and workflow-safe: no Node modules, so workflows may use `safeText` too.
//
// - Every string from outside is well-formed Unicode (no lone surrogate: Temporal's core cannot
//   encode one, and Postgres would store a replacement character instead) and holds no NUL
//   (Postgres refuses it in text).
// - Ids, codes, keys and URLs hold no C0 control character and no DEL at all.
// - Free text (redeem details, support reasons) may keep tab, newline and carriage return.

/* eslint-disable no-control-regex -- finding control characters is what these patterns are for */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const CONTROL = /[\u0000-\u001f\u007f]/;
const CONTROL_BUT_WHITESPACE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Object keys that would reach a prototype when copied into a plain object. */
const isForbiddenKey = (key: string) => key === '__proto__' || key === 'constructor' || key === 'prototype';

/** Deeper request values than this are refused: no field of the API nests more than a few levels. */
export const MAX_INPUT_DEPTH = 16;

export const isWellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

/** An id, code, key or URL: well-formed and free of control characters. */
export const isCleanId = (s: string): boolean => isWellFormed(s) && !CONTROL.test(s);

/** Free text: well-formed, and of the control characters only tab, newline and carriage return. */
export const isCleanText = (s: string): boolean => isWellFormed(s) && !CONTROL_BUT_WHITESPACE.test(s);

export interface InputProblem {
  /** Dotted path of the offending value (`body.redeemInfo.name`), never the value itself. */
  path: string;
  reason: 'malformed_text' | 'forbidden_key' | 'too_deep';
}

/**
 * The first value anywhere in `value` that breaks the rule every input string must keep (the
 * free-text rule, or the id rule with `ids`; object keys are always held to the id rule), or
 * undefined. Iterative, so a deeply nested body cannot exhaust the stack.
 */
export function findInputProblem(
  value: unknown,
  root = 'input',
  opts: { ids?: boolean; maxDepth?: number } = {},
): InputProblem | undefined {
  const maxDepth = opts.maxDepth ?? MAX_INPUT_DEPTH;
  const clean = opts.ids ? isCleanId : isCleanText;
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: value, path: root, depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      if (!clean(v)) return { path, reason: 'malformed_text' };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= maxDepth) return { path, reason: 'too_deep' };
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, path: `${path}.${i}`, depth: depth + 1 }));
      continue;
    }
    for (const key of Object.keys(v)) {
      const at = `${path}.${isCleanId(key) ? key : '?'}`;
      if (!isCleanId(key)) return { path: at, reason: 'malformed_text' };
      if (isForbiddenKey(key)) return { path: at, reason: 'forbidden_key' };
      stack.push({ v: (v as Record<string, unknown>)[key], path: at, depth: depth + 1 });
    }
  }
  return undefined;
}

export const PROBLEM_MESSAGE: Record<InputProblem['reason'], string> = {
  malformed_text: 'must be well-formed text without NUL or control characters',
  forbidden_key: 'is not an accepted field name',
  too_deep: 'is nested too deeply',
};

/**
 * Our own text made safe to carry anywhere (a Temporal failure, a log line): lone surrogates
 * become U+FFFD, control characters other than newline and tab become spaces, and it is cut to
 * `max` characters.
 */
export function safeText(s: string, max = 1000): string {
  const cleaned = s
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ' ');
  if (cleaned.length <= max) return cleaned;
  // Never cut a surrogate pair in half.
  const cut = /[\ud800-\udbff]/.test(cleaned[max - 1]) ? max - 1 : max;
  return `${cleaned.slice(0, cut)}…`;
}

/**
 * Makes an error's message and stack, and its causes', safe to encode anywhere (Temporal's core
 * rejects a lone surrogate in a failure message), in place; returns the same error.
 */
export function sanitizeError(err: unknown): unknown {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if (!isCleanText(e.message)) e.message = safeText(e.message);
    if (e.stack !== undefined && !isCleanText(e.stack)) e.stack = safeText(e.stack, 8000);
  }
  return err;
}
