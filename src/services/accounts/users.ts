import { randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { UserSchema, type User } from '../../db/entities/all-entities';
import { ApiError } from '../../domain/errors';
import { openAccount } from './accounts';
import { hashPassword, verifyPassword } from './passwords';
import { hitRateLimit } from '../rate-limit';
import { throttledSignIn, type SignInLimits } from './sign-in-throttle';

// The people who sign in to the account area. One user owns one account; a new account starts
// exactly as one made by the CLI (Lv1, zero balance, no ledger rows) but without a key: keys are
// made in the area, where they can be shown once.

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/** One answer for every failed sign-in, so it never tells whether an email is registered. */
export const BAD_CREDENTIALS = 'The email or password is not right.';
/** One answer for every refused sign-up. */
export const SIGN_UP_REFUSED = 'An account could not be created with these details. If you already have one, sign in.';

export async function signUp(em: EntityManager, input: { email: string; password: string }): Promise<User> {
  const email = normalizeEmail(input.email);
  const passwordHash = await hashPassword(input.password);
  try {
    return await em.transactional(async (tx) => {
      const accountId = await openAccount(tx, email);
      const user = tx.create(UserSchema, { id: randomUUID(), accountId, email, passwordHash });
      await tx.flush();
      return user;
    });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException)
      throw new ApiError('invalid_input', SIGN_UP_REFUSED, { field: 'email' });
    throw err;
  }
}

/**
 * Checks an email and password, under the failure budgets of this email from this client address
 * and of the address (./sign-in-throttle: someone else's wrong guesses never lock a user out).
 */
export async function signIn(
  em: EntityManager,
  input: { email: string; password: string; ip: string },
  limits: SignInLimits,
): Promise<User> {
  const email = normalizeEmail(input.email);
  return throttledSignIn(em, 'account', { email, ip: input.ip }, limits, async () => {
    const user = await em.findOne(UserSchema, { email });
    if (!(await verifyPassword(input.password, user?.passwordHash)) || !user)
      throw new ApiError('unauthorized', BAD_CREDENTIALS);
    await em.nativeUpdate(UserSchema, { id: user.id }, { lastSignInAt: new Date() });
    return user;
  });
}

/** Sign-ups from one address share a budget, so accounts cannot be minted (or emails probed) in bulk. */
export async function checkSignUpBudget(
  em: EntityManager,
  ip: string,
  limit: number,
  windowSeconds: number,
): Promise<void> {
  const hit = await hitRateLimit(em, `signup-ip:${ip}`, limit, windowSeconds);
  if (!hit.allowed)
    throw new ApiError('rate_limited', 'Too many sign-ups from this address', undefined, {
      'Retry-After': String(hit.retryAfter),
    });
}

/** The signed-in user of a session, or undefined if it no longer exists. */
export async function findUser(em: EntityManager, userId: string): Promise<User | undefined> {
  return (await em.findOne(UserSchema, { id: userId })) ?? undefined;
}

/**
 * Gives an existing account (one made by the CLI, or the demo account) a user with this email and
 * password, or sets the password of the user it has.
 */
export async function setAccountLogin(
  em: EntityManager,
  accountId: string,
  input: { email: string; password: string },
): Promise<User> {
  const email = normalizeEmail(input.email);
  const passwordHash = await hashPassword(input.password);
  const user = await em.findOne(UserSchema, { accountId });
  if (user) {
    user.passwordHash = passwordHash;
    await em.flush();
    return user;
  }
  const created = em.create(UserSchema, { id: randomUUID(), accountId, email, passwordHash });
  await em.flush();
  return created;
}

/** True when the account's user signs in with this password (checked without counting an attempt). */
export async function accountLoginWorks(em: EntityManager, accountId: string, password: string): Promise<boolean> {
  const user = await em.findOne(UserSchema, { accountId });
  return !!user && (await verifyPassword(password, user.passwordHash));
}
