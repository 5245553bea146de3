import type { Request, RequestHandler, Response } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { StaffRole, StaffRow } from '../db/staff-store';
import type { AppContext } from '../http/context';
import { audited, type Actor, type AuditContext, type AuditEntry } from '../services/accounts/audit';
import { allows, type Viewer } from './console-layout';

// Who is asking, and what they may do. Every handler behind sign-in works with a Desk: the
// signed-in member (read from Postgres on each request, so a role change or a disabled account
// counts at once), the actor the services record, and the audit context of this request.

/** Refused for the member's role: the console answers 403 and nothing runs. */
export class Forbidden extends Error {
  constructor(readonly needed: StaffRole) {
    super(`This needs the ${needed} role`);
    this.name = 'Forbidden';
  }
}

export interface Desk {
  em: EntityManager;
  staff: StaffRow;
  actor: Actor & { kind: 'staff' };
  viewer: Viewer;
  audit: AuditContext;
  /** Whether the member's role allows what `role` may do (to show a button or not). */
  may(role: StaffRole): boolean;
}

export function desk(req: Request, res: Response, ctx: AppContext): Desk {
  const staff: StaffRow = res.locals.staff;
  const actor = { kind: 'staff' as const, staffId: staff.id, name: staff.name, email: staff.email, role: staff.role };
  return {
    em: ctx.orm.em.fork(),
    staff,
    actor,
    viewer: { name: staff.name, email: staff.email, role: staff.role, csrf: req.csrfToken!() },
    audit: { actor, requestId: res.locals.requestId ?? null },
    may: (role) => allows(staff.role, role),
  };
}

/** A route for `role` and above; checked before the form is read. */
export const only =
  (role: StaffRole): RequestHandler =>
  (_req, res, next) => {
    if (!allows((res.locals.staff as StaffRow).role, role)) throw new Forbidden(role);
    next();
  };

/** Runs a console action with its audit row (written first) and outcome. */
export const act = <T>(d: Desk, entry: AuditEntry, run: () => Promise<T>): Promise<T> =>
  audited(d.em, d.audit, entry, run);
