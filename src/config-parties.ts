import { parseReloadlyProducts, type ReloadlyProducts } from './providers/reloadly/reloadly-settings';

// The settings of two outside parties that take more than one variable: the gift-card supplier
// (Reloadly) and the redemption partner. Each problem names the variable that is wrong.

interface UpstreamVariables {
  NODE_ENV?: string;
  REDEMPTION_UPSTREAM: string;
  REDEMPTION_UPSTREAM_URL?: string;
  REDEMPTION_UPSTREAM_SECRET?: string;
}

interface ReloadlyVariables {
  SUPPLIER_PROVIDER: string;
  RELOADLY_CLIENT_ID?: string;
  RELOADLY_CLIENT_SECRET?: string;
  RELOADLY_PRODUCTS?: string;
}

/** SUPPLIER_PROVIDER=reloadly needs its credentials and our products mapped to Reloadly's. */
export function reloadlySettings(c: ReloadlyVariables): { products: ReloadlyProducts; problems: string[] } {
  const problems: string[] = [];
  let products: ReloadlyProducts = {};
  if (c.SUPPLIER_PROVIDER === 'reloadly') {
    for (const name of ['RELOADLY_CLIENT_ID', 'RELOADLY_CLIENT_SECRET'] as const) {
      if (!c[name])
        problems.push(
          `  ${name}: required with SUPPLIER_PROVIDER=reloadly (from Reloadly's dashboard, Developers; per environment)`,
        );
    }
    if (!c.RELOADLY_PRODUCTS) {
      problems.push(
        '  RELOADLY_PRODUCTS: required with SUPPLIER_PROVIDER=reloadly (our direct-code product ids mapped to Reloadly productId and unitPrice, see the README)',
      );
    } else {
      const parsed = parseReloadlyProducts(c.RELOADLY_PRODUCTS);
      if ('errors' in parsed) problems.push(...parsed.errors.map((e) => `  RELOADLY_PRODUCTS: ${e}`));
      else products = parsed.products;
    }
  }
  return { products, problems };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * REDEMPTION_UPSTREAM=http needs where and how to sign. The partner is reached over HTTPS; plain
 * http only on loopback and outside production (a local partner, the tests).
 */
export function upstreamProblems(c: UpstreamVariables): string[] {
  const problems: string[] = [];
  if (c.REDEMPTION_UPSTREAM === 'http') {
    if (!c.REDEMPTION_UPSTREAM_URL)
      problems.push(
        "  REDEMPTION_UPSTREAM_URL: required with REDEMPTION_UPSTREAM=http (the partner's base URL, see docs/redemption-upstream.md)",
      );
    if (!c.REDEMPTION_UPSTREAM_SECRET)
      problems.push(
        '  REDEMPTION_UPSTREAM_SECRET: required with REDEMPTION_UPSTREAM=http (the HMAC secret shared with the partner, at least 32 characters)',
      );
  }
  if (c.REDEMPTION_UPSTREAM_URL && (c.REDEMPTION_UPSTREAM === 'http' || c.REDEMPTION_UPSTREAM === 'sandbox')) {
    const url = new URL(c.REDEMPTION_UPSTREAM_URL);
    const plainAllowed = c.NODE_ENV !== 'production' && LOOPBACK.has(url.hostname);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainAllowed)) {
      problems.push(
        `  REDEMPTION_UPSTREAM_URL: must be https://${c.NODE_ENV === 'production' ? '' : ' (plain http only on loopback outside production)'}`,
      );
    }
    if (url.search || url.hash || url.username || url.password)
      problems.push('  REDEMPTION_UPSTREAM_URL: a base URL without query, fragment or credentials');
  }
  return problems;
}
