import { ApiError } from '../../domain/errors';
import {
  addressAllowedByCidrs,
  isKeyScope,
  KEY_SCOPES,
  MAX_KEY_CIDRS,
  parseCidr,
  type KeyScope,
} from '../../domain/key-scopes';

// The limits a key is made with (scopes, the networks it may be used from, an expiry) and their
// check on every request, REST and MCP alike. A key outside them is a known key asking for what it
// may not do: 403 with a code that names why, before anything runs.

export interface KeyLimits {
  /** Null: every scope. */
  scopes: KeyScope[] | null;
  /** Null: from anywhere. */
  cidrs: string[] | null;
  validUntil: Date | null;
}

export const NO_LIMITS: KeyLimits = { scopes: null, cidrs: null, validUntil: null };

/** What a request with a key carries: its limits as the database had them, and whether it is past its expiry. */
export interface KeyGrant {
  scopes: readonly string[] | null;
  cidrs: readonly string[] | null;
  expired: boolean;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/** `2027-01-01` (the start of that day, UTC) or an ISO 8601 time with its offset. */
export function parseExpiry(text: string): Date | undefined {
  const t = text.trim();
  if (!DATE_ONLY.test(t) && !DATE_TIME.test(t)) return undefined;
  const d = new Date(DATE_ONLY.test(t) ? `${t}T00:00:00Z` : t);
  // Date rolls 2027-02-30 over into March: a day that does not exist is refused instead.
  if (Number.isNaN(d.getTime()) || (DATE_ONLY.test(t) && d.toISOString().slice(0, 10) !== t)) return undefined;
  return d;
}

/**
 * The limits a key is made with, from what a person or a program asked for: scopes by name (none
 * given: every scope), CIDRs (none: anywhere) and an expiry that must lie ahead.
 */
export function keyLimits(input: {
  scopes?: readonly string[];
  cidrs?: readonly string[];
  expires?: string;
}): KeyLimits {
  let scopes: KeyScope[] | null = null;
  if (input.scopes !== undefined) {
    const given = [...new Set(input.scopes.map((s) => s.trim()).filter(Boolean))];
    const unknown = given.filter((s) => !isKeyScope(s));
    if (unknown.length > 0)
      throw new ApiError('invalid_input', `Unknown scope ${unknown[0]}; scopes are ${KEY_SCOPES.join(', ')}`, {
        field: 'scopes',
      });
    if (given.length === 0) throw new ApiError('invalid_input', 'Give the key at least one scope', { field: 'scopes' });
    // Every scope is what a key without a list has: store it the same way.
    scopes = given.length === KEY_SCOPES.length ? null : KEY_SCOPES.filter((s) => given.includes(s));
  }
  let cidrs: string[] | null = null;
  const networks = [...new Set((input.cidrs ?? []).map((c) => c.trim().toLowerCase()).filter(Boolean))];
  if (networks.length > 0) {
    const bad = networks.find((c) => !parseCidr(c));
    if (bad !== undefined)
      throw new ApiError('invalid_input', `${bad.slice(0, 64)} is not a network like 203.0.113.0/24 or 2001:db8::/32`, {
        field: 'cidrs',
      });
    if (networks.length > MAX_KEY_CIDRS)
      throw new ApiError('invalid_input', `A key takes at most ${MAX_KEY_CIDRS} networks`, { field: 'cidrs' });
    cidrs = networks;
  }
  let validUntil: Date | null = null;
  if (input.expires !== undefined && input.expires.trim() !== '') {
    validUntil = parseExpiry(input.expires) ?? null;
    if (!validUntil)
      throw new ApiError(
        'invalid_input',
        'The expiry must be a date like 2027-01-01 or a time like 2027-01-01T12:00:00Z',
        { field: 'expires' },
      );
    if (validUntil.getTime() <= Date.now())
      throw new ApiError('invalid_input', 'The expiry must lie in the future', { field: 'expires' });
  }
  return { scopes, cidrs, validUntil };
}

/** The limits as the CLI prints them and the audit log keeps them. */
export function keyLimitDetails(l: KeyLimits) {
  return { scopes: l.scopes ?? [...KEY_SCOPES], cidrs: l.cidrs ?? [], expiresAt: l.validUntil?.toISOString() ?? null };
}

/** Refuses a key past its expiry, or used from outside its networks (`address`: the client as TRUST_PROXY resolves it). */
export function assertKeyUsable(grant: KeyGrant, address: string | undefined): void {
  if (grant.expired) throw new ApiError('key_expired', 'This API key has expired; make a new one in the account area');
  if (grant.cidrs && !addressAllowedByCidrs(grant.cidrs, address)) {
    throw new ApiError('ip_not_allowed', 'This API key may not be used from this address');
  }
}

/** Refuses an operation outside the key's scopes; `every`: only a key with every scope may. */
export function assertScope(grant: KeyGrant, needed: KeyScope | 'every'): void {
  if (!grant.scopes) return;
  const missing =
    needed === 'every'
      ? KEY_SCOPES.find((s) => !grant.scopes!.includes(s))
      : grant.scopes.includes(needed)
        ? undefined
        : needed;
  if (missing)
    throw new ApiError('insufficient_scope', `This API key lacks the ${missing} scope this operation needs`, {
      scope: missing,
    });
}
