import { ApiError } from './errors';

// The one validation of `redeemInfo` (spec 2.3, 4.4), shared by POST /redemptions and the public
// redemption site. It runs before a code is touched, so a malformed submission never consumes
// one. Field semantics are decided by key; the record keeps normalized values only.

/** The shape of a product's redeem field (spec 2.3). */
export interface RedeemFieldDef {
  key: string;
  label: string;
  type: 'text' | 'email' | 'password' | 'select' | 'textarea';
  required: boolean;
  options?: string[];
  placeholder?: string;
}

export interface ValidatedRedeemInfo {
  /** What the redemption record keeps: normalized values, passwords masked, no session JSON. */
  stored: Record<string, string>;
  /** Password values: sent upstream, never stored. */
  secrets: Record<string, string>;
  /** The normalized user id of a session-user-id field, for the session pre-check. */
  sessionUserId?: string;
}

export const MASKED_SECRET = '********';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TELEGRAM_RE = /^[A-Za-z][A-Za-z0-9_]{4,31}$/;
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;
const SESSION_USER_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
const MAX_VALUE = 1024;
const MAX_SESSION_JSON = 64 * 1024;

type FieldKind = 'uuid' | 'session' | 'telegram' | 'email' | 'select' | 'text';

export function fieldKind(field: RedeemFieldDef): FieldKind {
  if (field.key === 'account_id') return 'uuid';
  if (field.key === 'session_user_id') return 'session';
  if (field.key === 'telegram_username') return 'telegram';
  if (field.key === 'email' || field.type === 'email') return 'email';
  if (field.type === 'select') return 'select';
  return 'text';
}

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/**
 * A session-user-id value is a UUID, or a full session JSON whose `status` is `authenticated`
 * and which carries `session.userId`. Only the normalized user id survives.
 */
export function normalizeSessionUserId(value: string): string {
  const invalid = () =>
    new ApiError(
      'invalid_session_json',
      'Give a user id (UUID) or the full JSON of an authenticated session with session.userId',
      {
        field: 'session_user_id',
      },
    );
  const trimmed = value.trim();
  if (isUuid(trimmed)) return trimmed.toLowerCase();
  if (!trimmed.startsWith('{') || trimmed.length > MAX_SESSION_JSON) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    throw invalid();
  }
  const session = parsed as { status?: unknown; session?: { userId?: unknown } } | null;
  if (!session || typeof session !== 'object' || Array.isArray(session) || session.status !== 'authenticated')
    throw invalid();
  const userId = session.session && typeof session.session === 'object' ? session.session.userId : undefined;
  if (typeof userId !== 'string') throw invalid();
  const id = userId.trim();
  if (isUuid(id)) return id.toLowerCase();
  if (!SESSION_USER_ID_RE.test(id)) throw invalid();
  return id;
}

/** Optional leading @, then 5-32 of [A-Za-z0-9_] starting with a letter; kept without the @. */
export function normalizeTelegramUsername(value: string): string {
  const name = value.trim().replace(/^@/, '');
  if (!TELEGRAM_RE.test(name)) {
    throw new ApiError(
      'invalid_telegram_username',
      'A Telegram username has 5-32 letters, digits or underscores and starts with a letter',
      {
        field: 'telegram_username',
      },
    );
  }
  return name;
}

function normalizeField(field: RedeemFieldDef, value: string): string {
  const kind = fieldKind(field);
  if (kind === 'session') return normalizeSessionUserId(value);
  if (value.length > MAX_VALUE) throw new ApiError('invalid_input', `${field.key} is too long`, { field: field.key });
  const trimmed = field.type === 'password' ? value : value.trim();
  switch (kind) {
    case 'uuid':
      if (!isUuid(trimmed))
        throw new ApiError('invalid_account_id', `${field.key} must be a UUID`, { field: field.key });
      return trimmed.toLowerCase();
    case 'telegram':
      return normalizeTelegramUsername(trimmed);
    case 'email': {
      if (!EMAIL_RE.test(trimmed) || trimmed.length > 254) {
        throw new ApiError('invalid_input', `${field.key} must be an email address`, { field: field.key });
      }
      const at = trimmed.lastIndexOf('@');
      return `${trimmed.slice(0, at)}@${trimmed.slice(at + 1).toLowerCase()}`;
    }
    case 'select':
      if (field.options && !field.options.includes(trimmed)) {
        throw new ApiError('invalid_input', `${field.key} must be one of the field's options`, { field: field.key });
      }
      return trimmed;
    default:
      return trimmed;
  }
}

/**
 * Checks `redeemInfo` against a product's redeem fields: an object of strings with known keys
 * (`invalid_input`), every required field non-empty (`missing_field`), and each value in the shape
 * its key demands. Fields are checked in the product's order, so the first problem is reported.
 */
export function validateRedeemInfo(fields: readonly RedeemFieldDef[], input: unknown): ValidatedRedeemInfo {
  const info = input ?? {};
  if (typeof info !== 'object' || Array.isArray(info))
    throw new ApiError('invalid_input', 'redeemInfo must be an object of strings');
  const known = new Map(fields.map((f) => [f.key, f]));
  for (const [key, value] of Object.entries(info)) {
    if (!known.has(key))
      throw new ApiError('invalid_input', `redeemInfo has an unknown field: ${key.slice(0, 64)}`, {
        field: key.slice(0, 64),
      });
    if (typeof value !== 'string')
      throw new ApiError('invalid_input', `redeemInfo.${key} must be a string`, { field: key });
  }
  const values = info as Record<string, string>;
  const result: ValidatedRedeemInfo = { stored: {}, secrets: {} };
  for (const field of fields) {
    const value = Object.prototype.hasOwnProperty.call(values, field.key) ? values[field.key] : '';
    if (value.trim() === '') {
      if (field.required) throw new ApiError('missing_field', `${field.key} is required`, { field: field.key });
      continue;
    }
    const normalized = normalizeField(field, value);
    if (field.type === 'password') {
      result.secrets[field.key] = normalized;
      result.stored[field.key] = MASKED_SECRET;
    } else {
      result.stored[field.key] = normalized;
    }
    if (fieldKind(field) === 'session') result.sessionUserId = normalized;
  }
  return result;
}

/** The fields to show an end customer: English labels where a translation exists (spec 2.1). */
export function displayFields(
  fields: readonly RedeemFieldDef[],
  fieldsEn: readonly RedeemFieldDef[],
): RedeemFieldDef[] {
  const english = new Map(fieldsEn.map((f) => [f.key, f]));
  return fields.map((f) => {
    const en = english.get(f.key);
    return en ? { ...f, label: en.label, placeholder: en.placeholder ?? f.placeholder, options: f.options } : f;
  });
}

// Masking of deliverables (spec 2.8: a masked completion note that never contains raw data other
// than card codes). Submitted values are masked wherever they appear, and so are e-mail
// addresses, UUIDs and token-like strings the upstream might echo.

export function maskValue(value: string): string {
  const at = value.indexOf('@');
  if (at > 0) return `${value[0]}***${value.slice(at)}`;
  if (value.length <= 4) return '****';
  return `${value.slice(0, 2)}${'*'.repeat(Math.min(value.length - 4, 8))}${value.slice(-2)}`;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const EMAIL_ANYWHERE = /[^\s@<>()"',;:]+@[^\s@<>()"',;:]+\.[A-Za-z]{2,}/g;
const UUID_ANYWHERE = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const JWT_ANYWHERE = /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]*)?/g;
const LONG_TOKEN = /\b[A-Za-z0-9_-]{32,}\b/g;
export const MAX_DELIVERABLE = 1000;

export function maskDeliverable(text: string, sensitive: readonly string[] = []): string {
  let out = text;
  const values = [...new Set(sensitive.filter((v) => v && v !== MASKED_SECRET && v.length >= 4))].sort(
    (a, b) => b.length - a.length,
  );
  for (const v of values) out = out.replace(new RegExp(escapeRe(v), 'gi'), (m) => maskValue(m));
  out = out
    .replace(JWT_ANYWHERE, '[token]')
    .replace(EMAIL_ANYWHERE, (m) => (m.includes('***@') ? m : maskValue(m)))
    .replace(UUID_ANYWHERE, (m) => `${m.slice(0, 4)}****${m.slice(-4)}`)
    .replace(LONG_TOKEN, (m) => maskValue(m));
  return out.length > MAX_DELIVERABLE ? `${out.slice(0, MAX_DELIVERABLE - 1)}…` : out;
}
