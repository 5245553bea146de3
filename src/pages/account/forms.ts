import { FreeText, IdString } from '../../http/hygiene';
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

export const KeyForm = z.object({
  name: IdString(64).refine((s) => s.trim().length > 0, 'give the key a name'),
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

/** A fresh id per rendered form (as the top-up's), so a form sent twice is one export or one batch. */
const Nonce = (prefix: string) => IdString(64).regex(new RegExp(`^${prefix}-[A-Za-z0-9_-]{8,48}$`), 'reload the page and try again');

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
