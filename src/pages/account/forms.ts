import { IdString } from '../../http/hygiene';
import { z } from '../../http/openapi';
import { Cursor, Decimal } from '../../http/schemas';
import { PutWebhookBody } from '../../http/routers/webhook';

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

/** The same URL rules as PUT /webhook. */
export const WebhookForm = z.object({ url: PutWebhookBody.shape.url });

export const IdParams = z.object({ id: IdString(128) });

export const ListQuery = z.object({ cursor: Cursor });
