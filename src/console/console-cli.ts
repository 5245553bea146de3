// `npx wholesale staff create`: the first admin of the console (later ones are invited in the
// console). Prints the one-time setup link, where the new member sets a password and enrols
// a TOTP app; the command itself never sees either.
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import { STAFF_ROLES, type StaffRole } from '../db/staff-store';
import { ApiError } from '../domain/errors';
import { auditedCommand, operatorOf } from '../cli-operator';
import { actorLabel } from '../services/accounts/audit';
import { inviteStaff, setupUrl } from '../services/accounts/staff';
import { parseKeyRing } from '../temporal/codec';

export const STAFF_USAGE = `  staff create --role viewer|support|admin --email EMAIL --name NAME --by NAME --reason TEXT
                                                      a console member (the first admin); prints a one-time setup
                                                      link for the password and the TOTP second factor`;

/** The parseArgs options this command reads (besides --name). */
export const STAFF_OPTIONS = { role: { type: 'string' }, email: { type: 'string' } } as const;

type Values = Record<string, string | boolean | undefined>;
type StaffCommand = (ctx: { orm: Orm; config: Config; values: Values; positionals: string[] }) => Promise<unknown>;

const text = (values: Values, name: string): string => {
  const v = values[name];
  if (typeof v !== 'string' || !v.trim()) throw new ApiError('invalid_input', `--${name} is required`);
  return v.trim();
};

export const staffCommands: Record<string, StaffCommand> = {
  'staff create': async ({ orm, config, values }) => {
    const role = text(values, 'role');
    if (!(STAFF_ROLES as readonly string[]).includes(role))
      throw new ApiError('invalid_input', `--role must be one of ${STAFF_ROLES.join(', ')}`);
    const email = text(values, 'email');
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254)
      throw new ApiError('invalid_input', '--email must be an email address');
    const name = text(values, 'name');
    if (name.length > 80) throw new ApiError('invalid_input', '--name must be at most 80 characters');
    const operator = operatorOf(values);
    const em = orm.em.fork();
    const inv = await auditedCommand(em, operator, { action: 'staff.invite', details: { email, role } }, () =>
      inviteStaff(
        em,
        parseKeyRing(config.TEMPORAL_PAYLOAD_KEYS),
        { email, name, role: role as StaffRole },
        actorLabel({ kind: 'cli', user: operator.name }),
      ),
    );
    return {
      staffId: inv.staff.id,
      email: inv.staff.email,
      name: inv.staff.name,
      role: inv.staff.role,
      setupUrl: setupUrl(config.publicBaseUrl, inv.setupToken),
      setupExpiresAt: inv.staff.setupExpiresAt?.toISOString() ?? null,
      note: 'Open the setup link once (it is shown only now) to set the password and enrol a TOTP app.',
    };
  },
};
