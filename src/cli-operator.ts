// Who runs a `npx wholesale` command that changes money, codes, access, staff or prices, and why:
// `--by NAME` (`--actor` is its older name) and `--reason TEXT` (`--note` where a command already
// took one). The command is one audit row (actor `cli:NAME`, written before it acts, its outcome
// after), like a console or admin-API action; without a name it does not run.
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from './domain/errors';
import { audited, type AuditEntry } from './services/accounts/audit';

/** The parseArgs options these read (--reason and --note are the main command's too). */
export const OPERATOR_OPTIONS = {
  by: { type: 'string' },
  actor: { type: 'string' },
  reason: { type: 'string' },
  note: { type: 'string' },
} as const;

export interface Operator {
  /** The person, as they gave it with --by. */
  name: string;
  reason: string | null;
}

type Values = Record<string, string | boolean | undefined>;
const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);

/** The operator of a command; `reason: 'optional'` for commands where a why adds nothing (a claim). */
export function operatorOf(values: Values, opts: { reason?: 'required' | 'optional' } = {}): Operator {
  const name = text(values.by) ?? text(values.actor);
  if (!name) throw new ApiError('invalid_input', '--by NAME is required: who runs this command, for the audit log');
  if (name.length > 100) throw new ApiError('invalid_input', '--by must be at most 100 characters');
  const reason = text(values.reason) ?? text(values.note) ?? null;
  if (!reason && opts.reason !== 'optional')
    throw new ApiError('invalid_input', '--reason TEXT is required: why, for the audit log');
  return { name, reason };
}

/**
 * Runs a command's change under its audit row. The row carries the operator's name and reason; the
 * machine's login is kept beside them, since a name typed on the command line proves nothing.
 */
export function auditedCommand<T>(
  em: EntityManager,
  operator: Operator,
  entry: Omit<AuditEntry, 'reason'>,
  run: () => Promise<T>,
): Promise<T> {
  const osUser = process.env.USER ?? process.env.LOGNAME ?? null;
  return audited(
    em,
    { actor: { kind: 'cli', user: operator.name }, requestId: null },
    { ...entry, reason: operator.reason, details: { ...entry.details, osUser } },
    run,
  );
}
