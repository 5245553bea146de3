import type { Cents } from './money';

// Stablecoin amounts on chain are integers in the token's own decimals (6 on most chains, 18 on
// BNB Chain). To add transfers of different tokens and chains they are brought to one scale,
// 18 decimals of a dollar; the service's money stays cents.

const SCALE = 18;
const pow10 = (n: number) => 10n ** BigInt(n);

/** `units` of a token with `decimals`, at the common 18-decimal scale. */
export function toScaled(units: bigint, decimals: number): bigint {
  return decimals <= SCALE ? units * pow10(SCALE - decimals) : units / pow10(decimals - SCALE);
}

export function centsToScaled(cents: Cents): bigint {
  return BigInt(cents) * pow10(SCALE - 2);
}

/** Whole cents in a scaled amount; what is below a cent stays uncredited. */
export function scaledToCents(scaled: bigint): bigint {
  return scaled / pow10(SCALE - 2);
}

/** The token units that pay `cents` exactly (what a payment URI asks for). */
export function centsToUnits(cents: Cents, decimals: number): bigint {
  return decimals >= 2 ? BigInt(cents) * pow10(decimals - 2) : BigInt(cents) / pow10(2 - decimals);
}

/** A scaled amount as a plain decimal with up to `places` digits, trailing zeros kept to two ("12.50", "0.000001"). */
export function formatScaled(scaled: bigint, places = 6): string {
  const negative = scaled < 0n;
  const abs = negative ? -scaled : scaled;
  const whole = abs / pow10(SCALE);
  const frac = (abs % pow10(SCALE)).toString().padStart(SCALE, '0').slice(0, places).replace(/0+$/, '').padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${frac}`;
}
