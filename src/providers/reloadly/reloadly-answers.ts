import { z } from 'zod';
import { isCleanId } from '../../domain/text';

// Reloadly's answers as its documentation describes them, read leniently (extra fields are
// ignored, ids and amounts may come as numbers or strings), and the shape of our codes.

export const ACCEPT = 'application/com.reloadly.giftcards-v1+json';

/** Transaction statuses (the Java SDK's GiftCardTransactionStatus). */
export const SUCCESSFUL = 'SUCCESSFUL';
export const STILL_WORKING = new Set(['PROCESSING', 'PENDING']);
export const ENDED_WITHOUT_CARDS = new Set(['FAILED', 'REFUNDED']);

/** The identifier Reloadly answers a repeated customIdentifier with (400), without the existing order. */
export const CUSTOM_IDENTIFIER_ALREADY_USED = 'CUSTOM_IDENTIFIER_ALREADY_USED';

/**
 * Card numbers, PINs and transaction ids are documented as integers: JSON.parse would round a
 * long one to a double (and a PIN loses its leading zeros), so their digits are quoted first and
 * read as text.
 */
export function parseJsonKeepingDigits(text: string): unknown {
  return JSON.parse(
    text.replace(/("(?:cardNumber|pinCode|transactionId)"\s*:\s*)(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g, '$1"$2"'),
  );
}

const id = z.union([z.string().regex(/^\d{1,30}$/), z.number().int().nonnegative()]).transform(String);
const text = z.union([z.string(), z.number()]).transform(String);

export const tokenAnswer = z.object({
  access_token: z.string().min(1),
  expires_in: z.coerce.number().positive(),
  token_type: z.string().optional(),
});

/** {timeStamp, message, path, errorCode, infoLink, details}; Spring's default 404 has {status, error, message}. */
export const errorAnswer = z.object({
  message: z.string().nullish(),
  errorCode: z.string().nullish(),
  error: z.string().nullish(),
});
export type ReloadlyError = { message: string | null; errorCode: string | null };

export const transactionAnswer = z.object({
  transactionId: id,
  amount: z.number().nullish(),
  currencyCode: z.string().nullish(),
  customIdentifier: z.string().nullish(),
  status: z.string().min(1),
  product: z
    .object({
      productId: id.nullish(),
      quantity: z.number().int().nonnegative().nullish(),
      unitPrice: z.number().nullish(),
      currencyCode: z.string().nullish(),
    })
    .nullish(),
});
export type Transaction = z.infer<typeof transactionAnswer>;

/** GET /reports/transactions: a Spring page `{content: [...]}` (the SDK) or a bare array (the docs' example). */
export const transactionsPage = z.union([
  z.array(z.unknown()),
  z.object({ content: z.array(z.unknown()) }).transform((p) => p.content),
]);

const card = z.object({
  cardNumber: text.nullish(),
  pinCode: text.nullish(),
  redemptionUrl: z.string().nullish(),
});
export type Card = z.infer<typeof card>;
/** GET /orders/transactions/{id}/cards: an array (the SDK), or one card (the docs' schema). */
export const cardsAnswer = z.union([z.array(card), card.transform((c) => [c])]);

/** Our codes are at most this long (issued_codes.code). */
const MAX_CODE_LENGTH = 255;

/**
 * One card as the order's code: `<cardNumber> PIN <pinCode>` when it has a PIN, else the card
 * number (or, for a card that is only a link, its redemption URL). The spec's `codes` are strings
 * handed to the end customer as they are; this reads as it is and splits on " PIN ". Undefined for
 * a card that cannot be a code (empty, a control character, too long).
 */
export function codeOf(c: Card): string | undefined {
  const number = (c.cardNumber ?? '').trim() || (c.redemptionUrl ?? '').trim();
  const pin = (c.pinCode ?? '').trim();
  const code = pin ? `${number} PIN ${pin}` : number;
  return number && isCleanId(code) && code.length <= MAX_CODE_LENGTH ? code : undefined;
}

/** The supplier's words for support: one line, no control characters, bounded. */
export function reasonOf(status: number, e: ReloadlyError | null): string {
  const words = [e?.message?.trim() || `HTTP ${status}`, e?.errorCode ? `(${e.errorCode})` : '']
    .filter(Boolean)
    .join(' ');
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  return words.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 300);
}

/** An amount as a Decimal string with six places (Reloadly's amounts carry up to five). */
export function decimal6(n: number): string {
  return n.toFixed(6);
}

/** `total / qty` to six places, rounded half up, in exact integer arithmetic. */
export function divide6(total: string, qty: number): string {
  const negative = total.startsWith('-');
  const [whole, frac = ''] = total.replace('-', '').split('.');
  const micros = BigInt(whole + frac.padEnd(6, '0').slice(0, 6));
  const q = BigInt(qty);
  const unit = (micros * 2n + q) / (2n * q);
  const s = unit.toString().padStart(7, '0');
  return `${negative ? '-' : ''}${s.slice(0, -6)}.${s.slice(-6)}`;
}
