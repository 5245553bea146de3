import { z } from 'zod';
import { admissionProblems, admissionVariables } from './config-admission';
import { chainReadVariables } from './config-chains';
import { bulkSettings } from './config-bulk';
import { eventSettings } from './config-events';
import { productionExposureProblems } from './config-exposure';
import { reloadlySettings, upstreamProblems } from './config-parties';
import { trustProxySetting } from './config-trust-proxy';
import { receivingKey } from './providers/evm/addresses';
import { parseChains, type ChainSettings } from './providers/evm/evm-settings';
import type { ReloadlyProducts } from './providers/reloadly/reloadly-settings';
import { parseKeyRing } from './temporal/codec';
import { temporalConnectionProblems } from './temporal/connection';

// Every duration the spec names is its own setting, defaulting to the spec's value, so tests can
// run the real workflows in seconds.
const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

const levelThresholds = z
  .string()
  .default('500,2000,10000,50000')
  .transform((raw, ctx) => {
    const parts = raw.split(',').map((p) => p.trim());
    const cents = parts.map((p) => (/^\d+(\.\d{1,2})?$/.test(p) ? Math.round(Number(p) * 100) : NaN));
    if (cents.length !== 4 || cents.some((c) => Number.isNaN(c))) {
      ctx.addIssue({
        code: 'custom',
        message: 'expected four Decimal amounts for Lv2..Lv5, e.g. 500,2000,10000,50000',
      });
      return z.NEVER;
    }
    if (cents.some((c, i) => i > 0 && c <= cents[i - 1])) {
      ctx.addIssue({ code: 'custom', message: 'thresholds must increase from Lv2 to Lv5' });
      return z.NEVER;
    }
    return cents;
  });

/** `USD=USDT,USD=USDC` as pairs (supplier currency, our currency); `none` for no pairs. */
const costAtPar = z
  .string()
  .default('USD=USDT,USD=USDC')
  .transform((raw, ctx) => {
    if (raw.trim() === 'none') return [] as [string, string][];
    const pairs = raw.split(',').map((p) => p.trim().split('='));
    if (pairs.some((p) => p.length !== 2 || !p.every((c) => /^[A-Z]{3,8}$/.test(c)))) {
      ctx.addIssue({
        code: 'custom',
        message: 'expected currency pairs like USD=USDT,USD=USDC (supplier currency=our currency), or none',
      });
      return z.NEVER;
    }
    return pairs as [string, string][];
  });

/**
 * Secrets with a built-in value so that `npm start` needs no setup. Production
 * (NODE_ENV=production) refuses to start with any of them; development warns once.
 */
export const DEV_SECRETS = {
  CURSOR_SECRET: 'wholesale-dev-cursor-secret',
  PAYMENT_CALLBACK_SECRET: 'sandbox-callback-secret',
  // Derives from the BIP39 test mnemonic ("abandon … about"), whose keys are public: for a local chain only.
  EVM_XPUB:
    'xpub6EF8jXqFeFEW5bwMU7RpQtHkzE4KJxcqJtvkCjJumzW8CPpacXkb92ek4WzLQXjL93HycJwTPUAcuNxCqFPKKU5m5Z2Vq4nCyh5CyPeBFFr',
  // The same mnemonic at m/44'/195'/0' (TRON's coin type), for a TRON chain in tests and development.
  TRON_XPUB:
    'xpub6D1AabNHCupeiLM65ZR9UStMhJ1vCpyV4XbZdyhMZBiJXALQtmn9p42VTQckoHVn8WNqS7dqnJokZHAHcHGoaQgmv8D45oNUKx6DZMNZBCd',
  // `npm start` makes its own key under STATE_DIR; this one serves `npm run api|worker` in development.
  TEMPORAL_PAYLOAD_KEYS: 'dev:EHx7rd+fD/56kAg3Le3TasIipbXMOeL0GuBFcdbBIFE=',
  // Signs the requests to the sandbox upstream (REDEMPTION_UPSTREAM=sandbox) when none is set.
  REDEMPTION_UPSTREAM_SECRET: 'sandbox-upstream-secret-for-development-only',
} as const;

export const configSchema = z.object({
  NODE_ENV: z.string().optional(),
  PORT: int(8080),
  HOST: z.string().default('127.0.0.1'),
  // How long the API keeps an idle keep-alive connection. Above what clients and proxies keep
  // theirs (a load balancer's 60 s), so the server is never the side that closes a connection
  // a client is about to reuse: a POST sent into that close fails with a reset.
  HTTP_KEEP_ALIVE_SECONDS: z.coerce.number().int().min(1).max(3600).default(65),
  // A Server-Timing header on API answers, for the latency anatomy (bench/anatomy.ts).
  SERVER_TIMING: bool(false),
  DATABASE_URL: z.string().url().optional(),
  // Each process migrates at start, under a lock (src/db/orm.ts); false where a Job runs `npm run migrate`.
  MIGRATE_ON_START: bool(true),
  STATE_DIR: z.string().default('.state'),
  EMBEDDED_PG_PORT: int(54329, 1),
  TEMPORAL_PORT: int(7233, 1),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('wholesale'),
  // Temporal over TLS (src/temporal/connection.ts): PEM file paths (CA, mTLS client pair), the name
  // on the frontend's certificate, Temporal Cloud's API key (a secret); production refuses plaintext
  // to a Temporal off this machine unless TEMPORAL_ALLOW_PLAINTEXT says the network is private.
  TEMPORAL_TLS: bool(false),
  TEMPORAL_TLS_CA: z.string().optional(),
  TEMPORAL_TLS_CERT: z.string().optional(),
  TEMPORAL_TLS_KEY: z.string().optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().optional(),
  TEMPORAL_API_KEY: z.string().optional(),
  TEMPORAL_ALLOW_PLAINTEXT: bool(false),
  TEMPORAL_UI_PORT: int(8233),
  // Which Temporal `npm start` runs when TEMPORAL_ADDRESS is unset: `dev` (the dev server on SQLite,
  // with its Web UI) or `server` (the production server, SQL persistence on the stack's Postgres,
  // no UI; built once by scripts/ensure-temporal-server.mjs).
  DEV_TEMPORAL: z.enum(['dev', 'server']).default('dev'),
  // Workflow task pollers of each worker: a number, or `autoscaling` (src/temporal/temporal-worker.ts).
  WORKFLOW_TASK_POLLERS: z.union([z.literal('autoscaling'), z.coerce.number().int().min(2).max(100)]).default(20),
  WORKFLOW_NONSTICKY_POLL_RATIO: z.coerce.number().min(0.05).max(1).default(0.5),
  // Threads that run workflow code in each worker (the SDK's workflowThreadPoolSize).
  WORKFLOW_THREADS: z.coerce.number().int().min(1).max(16).default(1),
  // More dynamic config for the Temporal server `npm start` runs, `name=value` separated by
  // spaces, on top of the tuned defaults (bench experiments; a real cluster has its own file).
  DEV_TEMPORAL_DYNAMIC_CONFIG: z
    .string()
    .optional()
    .transform((v) => (v ? v.split(/\s+/).filter(Boolean) : [])),
  PUBLIC_BASE_URL: z.string().url().optional(),
  // Prometheus metrics (with /healthz and /readyz) on their own port, kept off the public API
  // port; unset, an API process serves /metrics on its own port (never in production, which
  // requires it) and a lone worker serves none.
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  METRICS_HOST: z.string().default('127.0.0.1'),
  // Where the Temporal core exports its own metrics (loopback); unset, a free port is taken.
  TEMPORAL_CORE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ADMIN_TOKEN: z.string().min(16).optional(),
  // Signs list cursors so a forged one is rejected; it grants no access, but set it in production.
  CURSOR_SECRET: z.string().min(8).default(DEV_SECRETS.CURSOR_SECRET),

  PAYMENT_WINDOW_SECONDS: int(900, 1),
  PAYMENT_SYNC_SECONDS: int(10, 1),
  REDEMPTION_REFRESH_SECONDS: int(60, 1),
  // REDEMPTION_UPSTREAM=operators: how long an operator's claim on a queued redemption holds.
  OPERATOR_CLAIM_SECONDS: int(900, 1),
  WEBHOOK_TIMEOUT_MS: int(5000, 1),
  WEBHOOK_RETRY_BASE_SECONDS: int(30, 0),
  WEBHOOK_RETRY_CAP_SECONDS: int(21600, 1),
  WEBHOOK_MAX_ATTEMPTS: int(10, 1),
  WEBHOOK_ALLOW_INSECURE_URLS: bool(false),
  LEVEL_THRESHOLDS: levelThresholds,

  // The outside parties. Each sandbox is this service playing the party itself (free balance,
  // invented codes, scripted redemptions): the development default, refused in production.
  PAYMENT_PROVIDER: z.enum(['sandbox', 'evm']).default('sandbox'),
  SUPPLIER_PROVIDER: z.enum(['sandbox', 'reloadly', 'none']).default('sandbox'),
  REDEMPTION_UPSTREAM: z.enum(['sandbox', 'none', 'operators', 'http']).default('sandbox'),
  // REDEMPTION_UPSTREAM=http: a partner speaking docs/redemption-upstream.md at this base URL, with
  // this shared HMAC secret (never logged). The sandbox speaks the same protocol, served by this
  // service under /sandbox-upstream unless REDEMPTION_UPSTREAM_URL says where. Below the
  // activities' 30 s deadline.
  REDEMPTION_UPSTREAM_URL: z.string().url().optional(),
  REDEMPTION_UPSTREAM_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters (a random secret shared with the partner)')
    .optional(),
  REDEMPTION_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).max(25_000).default(10_000),
  // PAYMENT_PROVIDER=evm: the chains (JSON, see the README), the extended public key that derives
  // one deposit address per checkout, and how the nodes are asked.
  EVM_CHAINS: z.string().optional(),
  EVM_XPUB: z.string().default(DEV_SECRETS.EVM_XPUB),
  // The xpub of TRON's deposit addresses (m/44'/195'/0', see the README), when EVM_CHAINS has a TRON chain.
  TRON_XPUB: z.string().default(DEV_SECRETS.TRON_XPUB),
  // How the chains' nodes are asked and how long an address is watched (src/config-chains.ts).
  ...chainReadVariables,
  // SUPPLIER_PROVIDER=reloadly: Reloadly's gift-card API. The client credentials are per
  // environment (secrets: never logged, never in a workflow); RELOADLY_ENV picks the documented
  // URLs and the token's audience, RELOADLY_AUTH_URL / RELOADLY_API_URL send the calls elsewhere
  // (a proxy, a test's fake). RELOADLY_PRODUCTS maps our direct-code products to Reloadly's
  // (JSON, see the README).
  RELOADLY_CLIENT_ID: z.string().optional(),
  RELOADLY_CLIENT_SECRET: z.string().optional(),
  RELOADLY_ENV: z.enum(['sandbox', 'live']).default('sandbox'),
  RELOADLY_AUTH_URL: z.string().url().optional(),
  RELOADLY_API_URL: z.string().url().optional(),
  RELOADLY_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  RELOADLY_SENDER_NAME: z.string().min(1).max(100).default('Wholesale'),
  RELOADLY_PRODUCTS: z.string().optional(),
  // What products cost us (docs/providers.md, *What each product costs us*): a supplier cost in the first
  // currency of a pair counts 1:1 in the second, to compare it with our Lv1 price and to take it
  // from revenue in the margin report (a Reloadly account in US dollars, our prices in USDT).
  // `none`: only equal currencies are compared; other costs are reported, never converted.
  SUPPLIER_COST_AT_PAR: costAtPar,
  // Hosted checkout: the built-in sandbox provider is served by this service under /sandbox-pay.
  PAYMENT_PROVIDER_URL: z.string().url().optional(),
  PAYMENT_PROVIDER_TIMEOUT_MS: int(10000, 1),
  // How long an API request waits for its placement (order, top-up) before a retryable 503; above
  // PAYMENT_PROVIDER_TIMEOUT_MS, since an intent order's checkout is opened inside the placement.
  PLACEMENT_TIMEOUT_MS: int(15000, 1),
  // An order or top-up workflow that has answered no placement this long after it started looks
  // its order up in Postgres (a placement committed just before a Temporal restart lost its update).
  PLACEMENT_RECOVERY_SECONDS: int(120, 1),
  // Admission control of placements and the worker heartbeats it reads (src/config-admission.ts).
  ...admissionVariables,
  PAYMENT_CALLBACK_SECRET: z.string().min(8).default(DEV_SECRETS.PAYMENT_CALLBACK_SECRET),
  // The keys that encrypt every Temporal payload (and redemption secrets staged in Postgres):
  // `id:base64(32 bytes)` entries, comma-separated; the first encrypts, all decrypt (rotation).
  TEMPORAL_PAYLOAD_KEYS: z
    .string()
    .default(DEV_SECRETS.TEMPORAL_PAYLOAD_KEYS)
    .superRefine((spec, ctx) => {
      try {
        parseKeyRing(spec);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
  // Authorises the codec server for operators (the Temporal UI and CLI); unset, only ADMIN_TOKEN does.
  CODEC_TOKEN: z.string().min(16).optional(),
  // The Temporal Web UI's origin, the only one the codec server answers across origins.
  TEMPORAL_UI_ORIGIN: z.string().url().optional(),
  SANDBOX_PAYMENT_FAULT: z.enum(['none', 'error', 'timeout']).default('none'),
  SANDBOX_CALLBACK_DELAY_MS: int(0, 0),
  // After expiry the workflow keeps asking the provider for a late payment this long, this often.
  LATE_PAYMENT_WATCH_SECONDS: int(86400, 0),
  LATE_PAYMENT_POLL_SECONDS: int(300, 1),
  // A lone worker process (`npm run worker`) exits non-zero after this many worker failures in a
  // row (restarted with backoff in between); the embedded stack never gives up.
  WORKER_MAX_CONSECUTIVE_FAILURES: int(10, 1),
  // The reconciler (a Temporal Schedule, created by worker processes): every RECONCILE_SECONDS it
  // compares the non-final rows of Postgres with their workflows and restarts what Temporal lost
  // (0: this process creates no schedule). A row changed less than RECONCILE_GRACE_SECONDS ago is
  // left alone, its workflow may be starting; RECONCILE_PAGE_SIZE rows are looked at per step.
  RECONCILE_SECONDS: int(60, 0),
  RECONCILE_GRACE_SECONDS: int(60, 0),
  RECONCILE_PAGE_SIZE: int(200, 1),
  // The ledger check reads each account's rows after the last one it found adding up, and every
  // account from its first row this often (0: every run), which also sees a row changed after it
  // was checked.
  RECONCILE_LEDGER_FULL_HOURS: int(24, 0),
  RATE_LIMIT_PER_MINUTE: int(300, 1),
  REDEMPTION_RATE_LIMIT_PER_MINUTE: int(60, 1),
  // The public redemption site has no key: form posts are limited per client IP.
  SITE_RATE_LIMIT_PER_MINUTE: int(30, 1),
  TOPUP_RATE_LIMIT_PER_HOUR: int(20, 1),
  MAX_PENDING_TOPUPS: int(5, 1),
  STOCK_DISPLAY_CAP: int(100, 1),
  // Direct-code procurement (spec 3.2): rounds with backoff (base doubling after a round that obtained
  // nothing, capped), then needs_attention after PROCUREMENT_MAX_ROUNDS rounds or PROCUREMENT_DEADLINE_SECONDS.
  PROCUREMENT_RETRY_BASE_SECONDS: int(30, 0),
  PROCUREMENT_RETRY_CAP_SECONDS: int(900, 1),
  PROCUREMENT_MAX_ROUNDS: int(12, 1),
  PROCUREMENT_DEADLINE_SECONDS: int(7200, 1),
  // The built-in sandbox supplier's script, JSON by product id or "*" (see src/providers/sandbox/sandbox-supplier.ts).
  SANDBOX_SUPPLIER_SCRIPT: z.string().optional(),
  // The account area (/account). Unset, the session secret is derived from CURSOR_SECRET, so
  // production (which refuses the built-in CURSOR_SECRET) never signs sessions with a known key.
  SESSION_SECRET: z.string().min(16).optional(),
  SESSION_TTL_SECONDS: int(43200, 60),
  // A rotated API key keeps working this long, then stops (a revoked one stops at once).
  KEY_ROTATION_GRACE_SECONDS: int(86400, 0),
  // Failed sign-ins per email from one client IP, and per IP, in 15 minutes; sign-ups per IP per hour.
  SIGN_IN_RATE_LIMIT_PER_ACCOUNT: int(10, 1),
  SIGN_IN_RATE_LIMIT_PER_IP: int(50, 1),
  SIGN_UP_RATE_LIMIT_PER_IP: int(10, 1),

  // Who the client is (the proxies whose X-Forwarded-For names it: src/http/trust-proxy.ts), views
  // of checkout links (page and status JSON) per client IP per minute, and the role that migrates
  // (the schema's owner; DATABASE_URL's role then gets INSERT and SELECT alone on the audit log).
  TRUST_PROXY: trustProxySetting,
  CHECKOUT_RATE_LIMIT_PER_MINUTE: int(120, 1),
  DATABASE_MIGRATION_URL: z.string().url().optional(),
  ...eventSettings,
  ...bulkSettings,
});

export type Config = z.infer<typeof configSchema> & {
  publicBaseUrl: string;
  /** EVM_CHAINS parsed (empty when unset: `npm start` then runs a local chain). */
  evmChains: ChainSettings[];
  /** RELOADLY_PRODUCTS parsed (empty unless SUPPLIER_PROVIDER=reloadly). */
  reloadlyProducts: ReloadlyProducts;
  paymentProviderUrl: string;
  /** The redemption upstream's base URL and signing secret (REDEMPTION_UPSTREAM=http or sandbox). */
  redemptionUpstreamUrl: string;
  redemptionUpstreamSecret: string;
  /** Names of the secrets still at their built-in development value (never their values). */
  devSecrets: string[];
};

export class ConfigError extends Error {}

/** The outside parties this config would have played by the service's own sandboxes, with what can replace each. */
export function sandboxesInUse(
  c: Pick<z.infer<typeof configSchema>, 'PAYMENT_PROVIDER' | 'SUPPLIER_PROVIDER' | 'REDEMPTION_UPSTREAM'>,
) {
  const choices = [
    { name: 'PAYMENT_PROVIDER', value: c.PAYMENT_PROVIDER, alternatives: 'evm (the self-hosted USDT/USDC checkout)' },
    {
      name: 'SUPPLIER_PROVIDER',
      value: c.SUPPLIER_PROVIDER,
      alternatives:
        "none (no direct-code gift cards are procured) or reloadly (bought from Reloadly's gift-card API, see the README)",
    },
    {
      name: 'REDEMPTION_UPSTREAM',
      value: c.REDEMPTION_UPSTREAM,
      alternatives:
        'none (only manual products wait for an operator), operators (every redemption waits in the operator queue, see the README) or http (a partner speaking docs/redemption-upstream.md)',
    },
  ];
  return choices.filter((choice) => choice.value === 'sandbox');
}

/** Parses the environment; a bad value stops start-up with a message naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable counts as unset (`DATABASE_URL= npm start` uses the embedded database).
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(given);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  const problems: string[] = [];
  let evmChains: ChainSettings[] = [];
  if (c.PAYMENT_PROVIDER === 'evm') {
    if (c.EVM_CHAINS) {
      const chains = parseChains(c.EVM_CHAINS, { production: c.NODE_ENV === 'production' });
      if ('errors' in chains) problems.push(...chains.errors.map((e) => `  ${e}`));
      else evmChains = chains.chains;
    } else if (c.NODE_ENV === 'production') {
      problems.push('  EVM_CHAINS: required with PAYMENT_PROVIDER=evm (the chains a payer may pay on, see the README)');
    }
    const keys: ['EVM_XPUB' | 'TRON_XPUB', 60 | 195][] = [
      ['EVM_XPUB', 60],
      ...(evmChains.some((chain) => chain.kind === 'tron') ? [['TRON_XPUB', 195] as ['TRON_XPUB', 195]] : []),
    ];
    for (const [name, coinType] of keys) {
      try {
        receivingKey(c[name], coinType);
      } catch (err) {
        problems.push(`  ${name}: ${(err as Error).message}`);
      }
    }
  }
  // A secret counts only where its part is in use (the callback secret is the sandbox's).
  const inUse = (name: string) =>
    name === 'PAYMENT_CALLBACK_SECRET'
      ? c.PAYMENT_PROVIDER === 'sandbox'
      : name === 'EVM_XPUB'
        ? c.PAYMENT_PROVIDER === 'evm'
        : name === 'TRON_XPUB'
          ? evmChains.some((chain) => chain.kind === 'tron')
          : true;
  const devSecrets = Object.entries(DEV_SECRETS)
    .filter(([name, value]) => inUse(name) && c[name as keyof typeof DEV_SECRETS] === value)
    .map(([name]) => name);
  const { products: reloadlyProducts, problems: supplierProblems } = reloadlySettings(c);
  problems.push(...supplierProblems, ...upstreamProblems(c));
  problems.push(...temporalConnectionProblems(c));
  problems.push(...admissionProblems(c));
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  if (c.NODE_ENV === 'production') {
    const lines = devSecrets.map(
      (name) => `  ${name}: the built-in development value must not be used in production; set a secret of your own`,
    );
    // Loopback and plain-http receivers would let any reseller make the service call itself.
    if (c.WEBHOOK_ALLOW_INSECURE_URLS) lines.push('  WEBHOOK_ALLOW_INSECURE_URLS: must not be on in production');
    // Reloadly's sandbox sells cards no brand accepts: selling them would be selling nothing.
    if (c.SUPPLIER_PROVIDER === 'reloadly' && c.RELOADLY_ENV !== 'live')
      lines.push(
        "  RELOADLY_ENV: Reloadly's sandbox must not run in production (its cards are not real); set RELOADLY_ENV=live",
      );
    lines.push(
      ...sandboxesInUse(c).map(
        ({ name, alternatives }) =>
          `  ${name}: the sandbox must not run in production (it gives away what it sells); set ${name} to ${alternatives}`,
      ),
    );
    lines.push(...productionExposureProblems(c));
    if (lines.length > 0) throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const publicBaseUrl = (c.PUBLIC_BASE_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/$/, '');
  return {
    ...c,
    publicBaseUrl,
    devSecrets,
    evmChains,
    reloadlyProducts,
    paymentProviderUrl: (c.PAYMENT_PROVIDER_URL ?? `${publicBaseUrl}/sandbox-pay`).replace(/\/$/, ''),
    redemptionUpstreamUrl: (c.REDEMPTION_UPSTREAM_URL ?? `${publicBaseUrl}/sandbox-upstream`).replace(/\/$/, ''),
    redemptionUpstreamSecret: c.REDEMPTION_UPSTREAM_SECRET ?? DEV_SECRETS.REDEMPTION_UPSTREAM_SECRET,
  };
}
