import { z } from 'zod';

// How this deployment talks to Reloadly's gift-card API (SUPPLIER_PROVIDER=reloadly): which
// environment, where, with which credentials, and which Reloadly product each of our direct-code
// products is. The credentials are secrets: nothing here is ever logged or sent to a workflow.

/**
 * Reloadly's documented endpoints. The token's audience names the environment the token is for;
 * credentials are per environment, so sandbox credentials never buy a live card.
 */
export const RELOADLY_ENVIRONMENTS = {
  sandbox: {
    authUrl: 'https://auth.reloadly.com',
    apiUrl: 'https://giftcards-sandbox.reloadly.com',
    audience: 'https://giftcards-sandbox.reloadly.com',
  },
  live: {
    authUrl: 'https://auth.reloadly.com',
    apiUrl: 'https://giftcards.reloadly.com',
    audience: 'https://giftcards.reloadly.com',
  },
} as const;
export type ReloadlyEnvironment = keyof typeof RELOADLY_ENVIRONMENTS;

/** A face value: a Decimal with at most two places, given as a JSON number or string. */
const faceValue = z
  .union([z.number(), z.string()])
  .transform((v) => (typeof v === 'number' ? String(v) : v.trim()))
  .refine(
    (v) => /^\d{1,9}(\.\d{1,2})?$/.test(v) && Number(v) > 0,
    'expected a positive Decimal with at most two places, e.g. 25 or "25.00"',
  );

/** One of our products as Reloadly sells it: its product id and the denomination to order. */
const productMapping = z
  .object({
    // Reloadly's productId (GET /products); sandbox and live ids differ.
    productId: z.number().int().positive(),
    // The card's face value in the product's recipient currency: one of its fixed denominations,
    // or within its range (Reloadly's `unitPrice`).
    unitPrice: faceValue,
  })
  .strict();
export type ReloadlyProductMapping = z.infer<typeof productMapping>;

const productMap = z
  .record(z.string().min(1).max(255), productMapping)
  .refine((m) => Object.keys(m).length > 0, 'at least one product');
export type ReloadlyProducts = Record<string, ReloadlyProductMapping>;

/** RELOADLY_PRODUCTS parsed, or what is wrong with it. */
export function parseReloadlyProducts(raw: string): { products: ReloadlyProducts } | { errors: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return {
      errors: [
        'not valid JSON (expected {"<our product id>": {"productId": <Reloadly product id>, "unitPrice": "<face value>"}}, see the README)',
      ],
    };
  }
  const parsed = productMap.safeParse(json);
  if (parsed.success) return { products: parsed.data };
  return { errors: parsed.error.issues.map((i) => `${i.path.length ? `[${i.path.join('.')}] ` : ''}${i.message}`) };
}

export interface ReloadlySettings {
  clientId: string;
  clientSecret: string;
  /** Where tokens are asked for (`POST {authUrl}/oauth/token`). */
  authUrl: string;
  /** The gift-card API's base URL. */
  apiUrl: string;
  /** The token's audience: the environment's API, whatever URL the calls go to. */
  audience: string;
  /** Each HTTP call's deadline. */
  timeoutMs: number;
  /** The order's `senderName` (Reloadly shows it on the card's email). */
  senderName: string;
  products: ReloadlyProducts;
}

/** The settings for one environment, with explicit URLs (a proxy, or a test's fake) in place of its own. */
export function reloadlySettings(c: {
  env: ReloadlyEnvironment;
  clientId: string;
  clientSecret: string;
  authUrl?: string;
  apiUrl?: string;
  timeoutMs: number;
  senderName: string;
  products: ReloadlyProducts;
}): ReloadlySettings {
  const known = RELOADLY_ENVIRONMENTS[c.env];
  const base = (url: string) => url.replace(/\/+$/, '');
  return {
    clientId: c.clientId,
    clientSecret: c.clientSecret,
    authUrl: base(c.authUrl ?? known.authUrl),
    apiUrl: base(c.apiUrl ?? known.apiUrl),
    audience: known.audience,
    timeoutMs: c.timeoutMs,
    senderName: c.senderName,
    products: c.products,
  };
}
