import type { EntityManager } from '@mikro-orm/postgresql';

// Staff members of the console (staff, staff_recovery_codes). Secrets arrive here already hashed
// or sealed: nothing in this module sees a password, a TOTP secret or a recovery code in clear.

export const STAFF_ROLES = ['viewer', 'support', 'admin'] as const;
export type StaffRole = (typeof STAFF_ROLES)[number];

export interface StaffRow {
  id: string;
  email: string;
  name: string;
  role: StaffRole;
  password_hash: string | null;
  totp_key_id: string;
  totp_secret: Buffer;
  totp_last_step: string | null;
  setup_expires_at: Date | null;
  enrolled_at: Date | null;
  disabled_at: Date | null;
  created_by: string;
  created_at: Date;
  last_sign_in_at: Date | null;
}

const COLUMNS = `id, email, name, role, password_hash, totp_key_id, totp_secret, totp_last_step, setup_expires_at, enrolled_at,
  disabled_at, created_by, created_at, last_sign_in_at`;

export async function insertStaff(
  em: EntityManager,
  s: {
    id: string;
    email: string;
    name: string;
    role: StaffRole;
    totpKeyId: string;
    totpSecret: Buffer;
    setupTokenHash: string;
    setupExpiresAt: Date;
    createdBy: string;
  },
): Promise<void> {
  await em.execute(
    `insert into staff (id, email, name, role, totp_key_id, totp_secret, setup_token_hash, setup_expires_at, created_by)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [s.id, s.email, s.name, s.role, s.totpKeyId, s.totpSecret, s.setupTokenHash, s.setupExpiresAt, s.createdBy],
  );
}

export async function staffById(em: EntityManager, id: string): Promise<StaffRow | undefined> {
  const [row] = await em.execute<StaffRow[]>(`select ${COLUMNS} from staff where id = ?`, [id]);
  return row;
}

export async function staffByEmail(em: EntityManager, email: string): Promise<StaffRow | undefined> {
  const [row] = await em.execute<StaffRow[]>(`select ${COLUMNS} from staff where email = ?`, [email]);
  return row;
}

/** The member a live setup token belongs to (locked for the caller's transaction). */
export async function staffBySetupToken(
  em: EntityManager,
  tokenHash: string,
  lock = false,
): Promise<StaffRow | undefined> {
  const [row] = await em.execute<StaffRow[]>(
    `select ${COLUMNS} from staff where setup_token_hash = ? and setup_expires_at > now() and disabled_at is null${lock ? ' for update' : ''}`,
    [tokenHash],
  );
  return row;
}

export async function listStaffRows(em: EntityManager): Promise<StaffRow[]> {
  return em.execute<StaffRow[]>(`select ${COLUMNS} from staff order by created_at, id`);
}

/** Setup done: the password and the confirmed TOTP step are set and the token is spent. */
export async function completeStaffSetup(
  em: EntityManager,
  id: string,
  passwordHash: string,
  totpStep: number,
): Promise<void> {
  await em.execute(
    `update staff set password_hash = ?, totp_last_step = ?, enrolled_at = now(), setup_token_hash = null, setup_expires_at = null
      where id = ?`,
    [passwordHash, totpStep, id],
  );
}

/** A fresh setup: new token and TOTP secret, the old password and recovery codes no longer work. */
export async function resetStaffSetup(
  em: EntityManager,
  id: string,
  s: { totpKeyId: string; totpSecret: Buffer; setupTokenHash: string; setupExpiresAt: Date },
): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update staff set password_hash = null, totp_key_id = ?, totp_secret = ?, totp_last_step = null, enrolled_at = null,
            setup_token_hash = ?, setup_expires_at = ?, disabled_at = null
      where id = ? returning id`,
    [s.totpKeyId, s.totpSecret, s.setupTokenHash, s.setupExpiresAt, id],
  );
  await em.execute('delete from staff_recovery_codes where staff_id = ?', [id]);
  return rows.length > 0;
}

/**
 * Records the TOTP time step a sign-in used, only if it is later than the last one: two sign-ins
 * racing with the same code cannot both pass. False when the step was already used.
 */
export async function advanceTotpStep(em: EntityManager, id: string, step: number): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update staff set totp_last_step = ?, last_sign_in_at = now()
      where id = ? and (totp_last_step is null or totp_last_step < ?) returning id`,
    [step, id, step],
  );
  return rows.length > 0;
}

export async function touchStaffSignIn(em: EntityManager, id: string): Promise<void> {
  await em.execute('update staff set last_sign_in_at = now() where id = ?', [id]);
}

export async function setStaffRole(em: EntityManager, id: string, role: StaffRole): Promise<boolean> {
  return (
    (await em.execute<{ id: string }[]>('update staff set role = ? where id = ? returning id', [role, id])).length > 0
  );
}

export async function disableStaffRow(em: EntityManager, id: string): Promise<boolean> {
  return (
    (
      await em.execute<{ id: string }[]>(
        'update staff set disabled_at = now(), setup_token_hash = null where id = ? and disabled_at is null returning id',
        [id],
      )
    ).length > 0
  );
}

/**
 * Locks the rows of the admins who can sign in (enrolled, not disabled) and answers their ids: a
 * change that could leave no admin runs after it, so two admins demoting each other at once cannot
 * both succeed.
 */
export async function lockSignInAdmins(em: EntityManager): Promise<string[]> {
  const rows = await em.execute<{ id: string }[]>(
    `select id from staff where role = 'admin' and enrolled_at is not null and disabled_at is null order by id for update`,
  );
  return rows.map((r) => r.id);
}

export async function replaceRecoveryCodes(em: EntityManager, staffId: string, hashes: string[]): Promise<void> {
  await em.execute('delete from staff_recovery_codes where staff_id = ?', [staffId]);
  for (const hash of hashes)
    await em.execute('insert into staff_recovery_codes (staff_id, code_hash) values (?, ?)', [staffId, hash]);
}

/** Spends a recovery code: true once per code, false if unknown or already used. */
export async function spendRecoveryCode(em: EntityManager, staffId: string, hash: string): Promise<boolean> {
  const rows = await em.execute<{ staff_id: string }[]>(
    'update staff_recovery_codes set used_at = now() where staff_id = ? and code_hash = ? and used_at is null returning staff_id',
    [staffId, hash],
  );
  return rows.length > 0;
}

export async function unusedRecoveryCodes(em: EntityManager, staffId: string): Promise<number> {
  const [row] = await em.execute<{ n: number }[]>(
    'select count(*)::int as n from staff_recovery_codes where staff_id = ? and used_at is null',
    [staffId],
  );
  return Number(row.n);
}
