// Supplier costs are Decimal strings with up to six places (numeric(24,6)); revenue has two.
// Sums and differences of both are exact in integer millionths.

const DECIMAL = /^(-)?(\d+)(?:\.(\d{1,6}))?$/;

/** A Decimal string (up to six places, possibly negative) as an integer count of millionths. */
export function toMicros(value: string): bigint {
  const m = DECIMAL.exec(value.trim());
  if (!m) throw new RangeError(`not a Decimal with at most six places: ${value}`);
  const micros = BigInt(m[2]) * 1_000_000n + BigInt((m[3] ?? '').padEnd(6, '0'));
  return m[1] ? -micros : micros;
}

/** Millionths as a Decimal string with `places` places (2 or 6); only exact values are accepted. */
export function fromMicros(micros: bigint, places: 2 | 6 = 6): string {
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  const unit = 10n ** BigInt(6 - places);
  if (abs % unit !== 0n) throw new RangeError(`${micros} millionths do not fit ${places} places`);
  const scaled = (abs / unit).toString().padStart(places + 1, '0');
  return `${negative ? '-' : ''}${scaled.slice(0, -places)}.${scaled.slice(-places)}`;
}
