// Money is integer cents inside the service and a Decimal string (^\d+(\.\d{1,2})?$) on the wire.
export const DECIMAL_RE = /^\d+(\.\d{1,2})?$/;
/** The largest amount the service accepts anywhere (10^12 cents): keeps cents exact in a double. */
export const MAX_CENTS = 1_000_000_000_000;

export type Cents = number;

export function parseDecimal(value: string): Cents {
  if (!DECIMAL_RE.test(value)) throw new RangeError(`not a Decimal: ${value}`);
  const [whole, frac = ''] = value.split('.');
  const cents = Number(whole) * 100 + Number(frac.padEnd(2, '0'));
  if (!Number.isSafeInteger(cents) || cents > MAX_CENTS) throw new RangeError('amount too large');
  return cents;
}

/** A Decimal string within the amounts the service accepts (so parseDecimal cannot throw on it). */
export function isAmount(value: string): boolean {
  if (!DECIMAL_RE.test(value)) return false;
  const [whole, frac = ''] = value.split('.');
  const cents = Number(whole) * 100 + Number(frac.padEnd(2, '0'));
  return Number.isSafeInteger(cents) && cents <= MAX_CENTS;
}

/** Accepts what Postgres numeric(18,2) hydrates to ("12.30", "-5.00"). */
export function fromDb(value: string | number): Cents {
  const s = String(value);
  const negative = s.startsWith('-');
  const cents = parseDecimal(negative ? s.slice(1) : s);
  return negative ? -cents : cents;
}

export function toDecimal(cents: Cents): string {
  if (!Number.isSafeInteger(cents) || cents < 0) throw new RangeError(`not a non-negative cent amount: ${cents}`);
  return `${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/** Signed decimal string for ledger amounts: "-5.00" for a purchase. */
export function toSignedDecimal(cents: Cents): string {
  return cents < 0 ? `-${toDecimal(-cents)}` : toDecimal(cents);
}
