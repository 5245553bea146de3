import { FreeText, IdString } from '../../http/hygiene';
import { z } from '../../http/openapi';
import { Cursor, Decimal } from '../../http/schemas';
import { PutWebhookBody } from '../../http/routers/webhook-router';

// The account area's form and query schemas, built from the edge's hygiene strings like every
// other surface's. Fields a form does not declare are dropped (the CSRF field is checked by its
// own middleware); the whole body has already passed assertCleanInput.

const Email = IdString(254).pipe(z.email('enter an email address like name@example.com'));

export const SignUpForm = z.object({
  email: Email,
  password: IdString(256).min(12, 'use at least 12 characters'),
});

/** Sign-in checks no rules beyond the hygiene rule: a rule would hint at what accounts exist. */
export const SignInForm = z.object({
  email: IdString(254),
  password: IdString(256),
});

/**
 * A key's name and, when the form says it carries them (`limits`), its scopes (checkboxes: one
 * value or several), networks (separated by spaces or commas) and expiry date. A post with only a
 * name makes a key without limits, as before limits existed.
 */
export const KeyForm = z.object({
  name: IdString(64).refine((s) => s.trim().length > 0, 'give the key a name'),
  limits: z.literal('1').optional(),
  scopes: z.union([IdString(32), z.array(IdString(32)).max(8)]).optional(),
  cidrs: z.string().max(2000).optional(),
  expires: z.string().max(32).optional(),
});

/** `nonce` makes a resubmitted form (a double click, a reload) the same top-up: it is the externalTopupId. */
export const TopupForm = z.object({
  amount: Decimal,
  currency: z.enum(['USDT', 'USDC']),
  nonce: IdString(64).regex(/^web-[A-Za-z0-9_-]{8,48}$/, 'reload the page and try again'),
});

/**
 * The same rules as PUT /webhook: the URL and, when the form says it carries them
 * (`subscription`), the events (checkboxes: one value or several) and the balance.low threshold.
 */
export const WebhookForm = z.object({
  url: PutWebhookBody.shape.url,
  subscription: z.literal('1').optional(),
  events: z.union([IdString(48), z.array(IdString(48)).max(16)]).optional(),
  balanceLowThreshold: z.union([z.literal(''), Decimal]).optional(),
});

/** `2026-11-30T14:05` from a datetime-local field, read as UTC like every time the area shows. */
export const ResendForm = z.object({
  since: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/, 'enter a date and time like 2026-11-30 14:05')
    .transform((v, ctx) => {
      const t = Date.parse(`${v}Z`);
      if (Number.isNaN(t)) {
        ctx.addIssue({ code: 'custom', message: 'enter a date and time like 2026-11-30 14:05' });
        return z.NEVER;
      }
      return Math.floor(t / 1000);
    }),
});

export const IdParams = z.object({ id: IdString(128) });

export const ListQuery = z.object({ cursor: Cursor });

/** A fresh id per rendered form (as the top-up's), so a form sent twice is one export or one batch. */
const Nonce = (prefix: string) =>
  IdString(64).regex(new RegExp(`^${prefix}-[A-Za-z0-9_-]{8,48}$`), 'reload the page and try again');

/** Days as a date input gives them; both are included. `now` streams the file, `file` prepares it. */
export const ExportForm = z.object({
  kind: z.enum(['orders', 'ledger']),
  from: z.iso.date('pick a day'),
  to: z.iso.date('pick a day'),
  mode: z.enum(['now', 'file']),
  nonce: Nonce('web'),
});

/** A CSV text (uploaded or pasted): the lines of a batch, with a header. */
export const BatchForm = z.object({
  csv: FreeText(2_000_000).refine((s) => s.trim().length > 0, 'choose a CSV file or paste its lines'),
  nonce: Nonce('web'),
});
