import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

// Passwords are hashed with scrypt (memory-hard) and a random per-user salt. The stored form
// names its parameters, `scrypt$N$r$p$salt$hash`, so they can be raised later without
// invalidating existing hashes: a hash is always checked with the parameters it was made with.

/** N = 2^15, r = 8: 32 MiB of memory per hash, about 100 ms on one core of the CI machine. */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
const SALT_BYTES = 16;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 128 * params.N * params.r * 2 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/**
 * Checked when an email is unknown, so the answer takes as long: a well-formed hash with the
 * current parameters whose key matches no password.
 */
const DECOY = [
  'scrypt',
  PARAMS.N,
  PARAMS.r,
  PARAMS.p,
  randomBytes(SALT_BYTES).toString('base64url'),
  randomBytes(KEY_LENGTH).toString('base64url'),
].join('$');

/**
 * True when `password` matches `stored`. With no stored hash (an unknown email) it still does the
 * work of a check and answers false, so timing does not tell whether an email is registered.
 */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const hash = stored ?? DECOY;
  const [scheme, n, r, p, salt, key] = hash.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected) && stored !== undefined;
}
