import { STAFF_ROLES } from '../db/staff-store';
import { FreeText, IdString } from '../http/hygiene';
import { z } from '../http/openapi';

// The console's form and query schemas, from the edge's hygiene strings like every other
// surface's. The whole body has already passed assertCleanInput; the CSRF field is checked by its
// own middleware, and fields a form does not declare are dropped.

/** Sign-in checks no rules beyond the hygiene rule: a rule would hint at who is staff. */
export const SignInForm = z.object({
  email: IdString(254),
  password: IdString(256),
  code: IdString(64),
});

export const SetupQuery = z.object({ token: IdString(128) });

export const SetupForm = z.object({
  token: IdString(128),
  password: IdString(256).min(12, 'use at least 12 characters'),
  code: IdString(16),
});

const Reason = FreeText(2000).pipe(z.string().trim().min(1, 'give a reason'));

export const ReasonForm = z.object({ reason: Reason });

/** Codes pasted one per line (or separated by commas); blank lines are dropped. */
export const DeliverForm = z.object({
  reason: Reason,
  codes: FreeText(64_000)
    .transform((s) =>
      s
        .split(/[\r\n,]+/)
        .map((c) => c.trim())
        .filter(Boolean),
    )
    .pipe(z.array(IdString(255)).min(1, 'paste at least one code').max(1000)),
});

export const FulfilForm = z.object({
  reason: Reason,
  deliverable: FreeText(2000).pipe(z.string().trim().min(1, 'write what the reseller will see')),
});

export const FailForm = z.object({
  reason: Reason,
  failureCode: z.enum(['fulfillment_failed', 'rejected_by_operator']),
  holdsResources: z.enum(['on']).optional(),
});

export const AdjustForm = z.object({
  amount: z
    .string()
    .trim()
    .regex(/^-?\d+(\.\d{1,2})?$/, 'an amount like 12.50 or -3.00')
    .pipe(z.string().max(16)),
  reason: Reason,
});

export const InviteForm = z.object({
  email: IdString(254).pipe(z.email('enter an email address like name@example.com')),
  name: IdString(80).pipe(z.string().trim().min(1, 'give a name')),
  role: z.enum(STAFF_ROLES),
});

export const RoleForm = z.object({ role: z.enum(STAFF_ROLES), reason: Reason });

export const IdParams = z.object({ id: IdString(128) });
export const AccountItemParams = z.object({ id: IdString(128), itemId: IdString(255) });

/** A filter field a GET form sends empty when unused: empty is absent. */
const Filter = (max: number) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), IdString(max).optional());

export const SearchQuery = z.object({ q: Filter(254) });

export const AuditQuery = z.object({
  actor: Filter(254),
  action: Filter(64),
  id: Filter(255),
  before: z
    .string()
    .regex(/^\d{1,19}$/)
    .optional(),
});
