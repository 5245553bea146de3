import { randomInt, randomBytes } from 'node:crypto';

// No 0/O, 1/I/L, so a code read aloud or typed from a screenshot is unambiguous.
export const CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
export const CODE_RE = new RegExp(`^[${CODE_ALPHABET}]{4}(-[${CODE_ALPHABET}]{4}){3}$`);

export function generateCode(): string {
  const groups: string[] = [];
  for (let g = 0; g < 4; g++) {
    let group = '';
    for (let i = 0; i < 4; i++) group += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
    groups.push(group);
  }
  return groups.join('-');
}

/** Normalizes what an end customer typed: case, spaces, missing dashes. */
export function normalizeCode(input: string): string {
  const compact = input.toUpperCase().replace(/[^0-9A-Z]/g, '');
  if (compact.length !== 16) return input.trim().toUpperCase();
  return compact.match(/.{4}/g)!.join('-');
}

/** Opaque, unguessable identifiers with a type prefix: ord_..., evt_..., whd_... */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}
