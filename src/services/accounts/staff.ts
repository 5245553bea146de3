import { base32nopad } from '@scure/base';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { NodeCryptoPlugin } from '@otplib/plugin-crypto-node';
import { verifySync } from '@otplib/totp';
import { generateTOTP } from '@otplib/uri';
import {
  advanceTotpStep,
  completeStaffSetup,
  disableStaffRow,
  insertStaff,
  listStaffRows,
  lockSignInAdmins,
  replaceRecoveryCodes,
  resetStaffSetup,
  setStaffRole,
  spendRecoveryCode,
  staffByEmail,
  staffById,
  staffBySetupToken,
  touchStaffSignIn,
  unusedRecoveryCodes,
  type StaffRole,
  type StaffRow,
} from '../../db/staff-store';
import { ApiError } from '../../domain/errors';
import { isUuid } from '../../domain/redeem-info';
import { seal, unseal, type KeyRing } from '../../temporal/codec';
import { hashPassword, verifyPassword } from './passwords';
import { throttledSignIn, type SignInLimits } from './sign-in-throttle';
import { normalizeEmail } from './users';

// The people who work the console, apart from resellers' users. A member is invited (by the CLI
// for the first admin, then by admins in the console) with a one-time setup link; whoever opens
// it sets the password and enrols the TOTP second factor by entering a code, and is shown ten
// recovery codes once. Signing in takes email, password and a TOTP code (or a recovery code);
// each TOTP time step is accepted once, so a code seen over someone's shoulder cannot be replayed.

export { STAFF_ROLES, type StaffRole } from '../../db/staff-store';

const totpCrypto = new NodeCryptoPlugin();
/** Codes of the neighbouring 30-second steps are accepted too: phone clocks drift. */
const TOTP_TOLERANCE_SECONDS = 30;
const TOTP_ISSUER = 'Wholesale console';
const SETUP_TTL_SECONDS = 72 * 3600;
const RECOVERY_CODE_COUNT = 10;

/** One answer for every refused sign-in: it never tells which of the three was wrong. */
export const STAFF_BAD_CREDENTIALS = 'The email, password or code is not right.';

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const totpAad = (staffId: string) => `staff-totp:${staffId}`;

/** RFC 4648 base32, unpadded: how authenticator apps take a secret typed in by hand. */
export const base32 = (bytes: Uint8Array): string => base32nopad.encode(bytes);

/** A fresh TOTP secret, sealed for the row (it must be read back to check codes, so it is not hashed). */
function newTotpSecret(keys: KeyRing, staffId: string) {
  const { keyId, data } = seal(keys, totpAad(staffId), randomBytes(20));
  return { totpKeyId: keyId, totpSecret: data };
}

const openTotp = (keys: KeyRing, row: StaffRow) =>
  new Uint8Array(unseal(keys, row.totp_key_id, totpAad(row.id), row.totp_secret));

/** The time step a code belongs to, when it is valid and later than `afterStep`. */
function totpStep(secret: Uint8Array, code: string, afterStep: string | null): number | undefined {
  try {
    const result = verifySync({
      secret,
      token: code,
      crypto: totpCrypto,
      epochTolerance: TOTP_TOLERANCE_SECONDS,
      ...(afterStep === null ? {} : { afterTimeStep: Number(afterStep) }),
    });
    return result.valid ? result.timeStep : undefined;
  } catch {
    return undefined; // a malformed code, or a stored step ahead of this clock: not a valid code
  }
}

const newSetupToken = () => {
  const token = randomBytes(32).toString('base64url');
  return {
    token,
    setupTokenHash: sha256(`setup:${token}`),
    setupExpiresAt: new Date(Date.now() + SETUP_TTL_SECONDS * 1000),
  };
};

export const setupUrl = (baseUrl: string, token: string) =>
  `${baseUrl}/console/setup?token=${encodeURIComponent(token)}`;

const recoveryHash = (code: string) => sha256(`recovery:${code.toLowerCase().replace(/[^0-9a-f]/g, '')}`);

/** `a1b2-c3d4-e5f6-a7b8-c9d0`: 80 random bits each. */
const newRecoveryCode = () => randomBytes(10).toString('hex').match(/.{4}/g)!.join('-');

export interface StaffView {
  id: string;
  email: string;
  name: string;
  role: StaffRole;
  status: 'invited' | 'active' | 'disabled';
  createdBy: string;
  createdAt: Date;
  lastSignInAt: Date | null;
  setupExpiresAt: Date | null;
}

export const staffView = (r: StaffRow): StaffView => ({
  id: r.id,
  email: r.email,
  name: r.name,
  role: r.role,
  status: r.disabled_at ? 'disabled' : r.enrolled_at ? 'active' : 'invited',
  createdBy: r.created_by,
  createdAt: new Date(r.created_at),
  lastSignInAt: r.last_sign_in_at ? new Date(r.last_sign_in_at) : null,
  setupExpiresAt: r.setup_expires_at ? new Date(r.setup_expires_at) : null,
});

export interface Invitation {
  staff: StaffView;
  /** Shown once, to whoever invited: it leads to the password and TOTP setup. */
  setupToken: string;
}

/** A new member with a one-time setup token; the email must be new among staff. */
export async function inviteStaff(
  em: EntityManager,
  keys: KeyRing,
  input: { email: string; name: string; role: StaffRole },
  createdBy: string,
): Promise<Invitation> {
  const id = randomUUID();
  const { token, ...setup } = newSetupToken();
  try {
    await insertStaff(em, {
      id,
      email: normalizeEmail(input.email),
      name: input.name.trim(),
      role: input.role,
      ...newTotpSecret(keys, id),
      ...setup,
      createdBy,
    });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException)
      throw new ApiError('invalid_input', 'A staff member with this email already exists', { field: 'email' });
    throw err;
  }
  return { staff: staffView((await staffById(em, id))!), setupToken: token };
}

/**
 * A lost phone or password: a new setup link and TOTP secret; the old password and recovery codes
 * stop working. It also lifts a disable, since the member comes back only through the new link.
 * The last admin able to sign in cannot be reset (nobody could sign in to manage staff until the
 * link is used): their recovery codes, or `npx wholesale staff create`, are the way back.
 */
export async function resetStaff(em: EntityManager, keys: KeyRing, staffId: string): Promise<Invitation> {
  const { token, ...setup } = newSetupToken();
  return keepingAnAdmin(em, staffId, async (tx) => {
    if (!(await resetStaffSetup(tx, staffId, { ...newTotpSecret(keys, staffId), ...setup }))) return undefined;
    return { staff: staffView((await staffById(tx, staffId))!), setupToken: token };
  });
}

const setupNotFound = () =>
  new ApiError(
    'not_found',
    'This setup link is not valid: it was used, has expired, or was replaced. Ask an admin for a new one.',
  );

/** What the setup page shows: who is enrolling, and the TOTP secret for the authenticator app. */
export async function setupDetails(em: EntityManager, keys: KeyRing, token: string) {
  const row = await staffBySetupToken(em, sha256(`setup:${token}`));
  if (!row) throw setupNotFound();
  const secret = base32(openTotp(keys, row));
  return {
    email: row.email,
    name: row.name,
    role: row.role,
    secret,
    otpauthUri: generateTOTP({ issuer: TOTP_ISSUER, label: row.email, secret }),
  };
}

/**
 * Sets the password and confirms the TOTP enrolment with a current code; answers the recovery
 * codes, the only time they exist in clear.
 */
export async function completeSetup(
  em: EntityManager,
  keys: KeyRing,
  token: string,
  input: { password: string; code: string },
): Promise<{ staff: StaffView; recoveryCodes: string[] }> {
  const passwordHash = await hashPassword(input.password);
  return em.transactional(async (tx) => {
    const row = await staffBySetupToken(tx, sha256(`setup:${token}`), true);
    if (!row) throw setupNotFound();
    const step = totpStep(openTotp(keys, row), input.code.replace(/\s/g, ''), null);
    if (step === undefined)
      throw new ApiError(
        'invalid_input',
        'That code is not right: check the time on your phone and enter the current code',
        { field: 'code' },
      );
    const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await replaceRecoveryCodes(tx, row.id, recoveryCodes.map(recoveryHash));
    await completeStaffSetup(tx, row.id, passwordHash, step);
    return { staff: staffView((await staffById(tx, row.id))!), recoveryCodes };
  });
}

const refused = () => new ApiError('unauthorized', STAFF_BAD_CREDENTIALS);

/**
 * Checks email, password and code, under the failure budgets of this email from this client
 * address and of the address (./sign-in-throttle: someone else's wrong guesses never lock a
 * member out). The code is a TOTP code of a step later than the last one accepted, or an unused
 * recovery code (spent by this).
 */
export async function signInStaff(
  em: EntityManager,
  keys: KeyRing,
  input: { email: string; password: string; code: string; ip: string },
  limits: SignInLimits,
): Promise<{ staff: StaffRow; recoveryCodeUsed: boolean }> {
  const email = normalizeEmail(input.email);
  return throttledSignIn(em, 'console', { email, ip: input.ip }, limits, async () => {
    const row = await staffByEmail(em, email);
    const passwordOk = await verifyPassword(input.password, row?.password_hash ?? undefined);
    if (!row || !passwordOk || row.disabled_at || !row.enrolled_at) throw refused();
    const code = input.code.replace(/\s/g, '');
    if (/^\d{6}$/.test(code)) {
      const step = totpStep(openTotp(keys, row), code, row.totp_last_step);
      // The conditional update settles two sign-ins racing with one code: only one advances the step.
      if (step === undefined || !(await advanceTotpStep(em, row.id, step))) throw refused();
      return { staff: row, recoveryCodeUsed: false };
    }
    if (code.replace(/-/g, '').length !== 20 || !(await spendRecoveryCode(em, row.id, recoveryHash(code))))
      throw refused();
    await touchStaffSignIn(em, row.id);
    return { staff: row, recoveryCodeUsed: true };
  });
}

/** The member behind a console session, while enrolled and not disabled. */
export async function activeStaff(em: EntityManager, staffId: string): Promise<StaffRow | undefined> {
  const row = await staffById(em, staffId);
  return row && row.enrolled_at && !row.disabled_at ? row : undefined;
}

export async function listStaff(em: EntityManager): Promise<(StaffView & { recoveryCodesLeft: number })[]> {
  const rows = await listStaffRows(em);
  return Promise.all(
    rows.map(async (r) => ({ ...staffView(r), recoveryCodesLeft: await unusedRecoveryCodes(em, r.id) })),
  );
}

/**
 * Runs a change to one member (undefined: no such member) that must leave at least one admin able
 * to sign in: enrolled and not disabled (an invited admin who never set up cannot). The rows of
 * those admins are locked first, so two admins demoting each other at once cannot both succeed.
 */
async function keepingAnAdmin<T>(
  em: EntityManager,
  staffId: string,
  change: (tx: EntityManager) => Promise<T | undefined>,
): Promise<T> {
  if (!isUuid(staffId)) throw new ApiError('not_found', 'No such staff member');
  return em.transactional(async (tx) => {
    const admins = await lockSignInAdmins(tx);
    const result = await change(tx);
    if (result === undefined) throw new ApiError('not_found', 'No such staff member');
    if (admins.includes(staffId) && (await lockSignInAdmins(tx)).length === 0) {
      throw new ApiError('invalid_input', 'This would leave no admin who can sign in: make someone else admin first');
    }
    return result;
  });
}

const viewOf = async (tx: EntityManager, staffId: string) => staffView((await staffById(tx, staffId))!);

export function changeStaffRole(em: EntityManager, staffId: string, role: StaffRole): Promise<StaffView> {
  return keepingAnAdmin(em, staffId, async (tx) =>
    (await setStaffRole(tx, staffId, role)) ? viewOf(tx, staffId) : undefined,
  );
}

export function disableStaff(em: EntityManager, staffId: string): Promise<StaffView> {
  return keepingAnAdmin(em, staffId, async (tx) =>
    (await disableStaffRow(tx, staffId)) || (await staffById(tx, staffId)) ? viewOf(tx, staffId) : undefined,
  );
}
