// The soak's vocabulary: the products and service settings it runs with, its
// plan and target, what it records per request, and its seeded PRNG. Shared by the traffic
// (./soak), the invariant checker (./soak-invariants, ./soak-deadlines) and the report (./soak-report).
import { loadConfig, type Config } from '../../src/config';
import type { DeadlineSettings } from './soak-deadlines';

export const PRODUCTS = {
  /** Redemption code, on demand: balance and intent orders. */
  plus: 'prod_chatgpt_plus_1m',
  /** Redemption code with account_id + email: bought, then redeemed. */
  team: 'prod_chatgpt_team_1m',
  /** Direct-code gift cards, procured from the (scripted) sandbox supplier. */
  giftPartial: 'prod_apple_gift_card_us_10',
  giftFlaky: 'prod_roblox_gift_card_us_10',
} as const;

/** The supplier script the workers run with: partial rounds and transient failures. */
export const SOAK_SUPPLIER_SCRIPT = JSON.stringify({
  [PRODUCTS.giftPartial]: { steps: [1, 'transient', 1, 0], then: 'all', delayMs: 200 },
  [PRODUCTS.giftFlaky]: { steps: ['transient', 'transient', 1], then: 'all', delayMs: 100 },
});

/** Service settings that make the soak's workflows run their whole course in seconds. */
export const SOAK_SERVICE_ENV: Record<string, string> = {
  PAYMENT_WINDOW_SECONDS: '8',
  PAYMENT_SYNC_SECONDS: '1',
  LATE_PAYMENT_WATCH_SECONDS: '12',
  LATE_PAYMENT_POLL_SECONDS: '1',
  PAYMENT_PROVIDER_TIMEOUT_MS: '3000',
  // A placement waits at most this long (no worker, Temporal down: a retryable 503), and an order
  // or top-up workflow left without its placement update looks its order up after this long.
  PLACEMENT_TIMEOUT_MS: '6000',
  PLACEMENT_RECOVERY_SECONDS: '5',
  // A 200 receiver must be answered within this even on a loaded CI machine (two cores, a worker
  // bundling its workflows after a kill): at 1.5 s one delivery's three POSTs all timed out there.
  WEBHOOK_TIMEOUT_MS: '4000',
  WEBHOOK_RETRY_BASE_SECONDS: '1',
  WEBHOOK_RETRY_CAP_SECONDS: '2',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_ALLOW_INSECURE_URLS: 'true',
  PROCUREMENT_RETRY_BASE_SECONDS: '1',
  PROCUREMENT_RETRY_CAP_SECONDS: '2',
  PROCUREMENT_MAX_ROUNDS: '12',
  PROCUREMENT_DEADLINE_SECONDS: '600',
  REDEMPTION_REFRESH_SECONDS: '1',
  // The reconciler restarts what the faults made Temporal lose (a delivery's lost start, a
  // placement committed after its run gave up) within seconds of the grace period.
  RECONCILE_SECONDS: '5',
  RECONCILE_GRACE_SECONDS: '10',
  SANDBOX_SUPPLIER_SCRIPT: SOAK_SUPPLIER_SCRIPT,
};

export type Op = 'balanceOrder' | 'intentOrder' | 'topup' | 'directCode' | 'redemption';
export type HookMode = 'ok' | 'fail' | 'hang' | 'redirect';

export interface SoakTarget {
  apiUrls: string[];
  databaseUrl: string;
  temporalAddress: string;
  namespace?: string;
  payloadKeys: string;
  /** The service's payment window and late-payment watch (to time late payments). */
  paymentWindowSeconds: number;
  lateWatchSeconds: number;
  webhookMaxAttempts: number;
  /** What the deadline invariant allows (./soak-deadlines). */
  deadlines: DeadlineSettings;
}

/** The deadline invariant's settings, from the service's config. */
export function deadlineSettingsOf(
  c: Pick<
    Config,
    | 'RECONCILE_SECONDS'
    | 'RECONCILE_GRACE_SECONDS'
    | 'WEBHOOK_TIMEOUT_MS'
    | 'REDEMPTION_REFRESH_SECONDS'
    | 'PROCUREMENT_DEADLINE_SECONDS'
  >,
): DeadlineSettings {
  return {
    reconcileSeconds: c.RECONCILE_SECONDS,
    reconcileGraceSeconds: c.RECONCILE_GRACE_SECONDS,
    webhookTimeoutMs: c.WEBHOOK_TIMEOUT_MS,
    redemptionRefreshSeconds: c.REDEMPTION_REFRESH_SECONDS,
    procurementDeadlineSeconds: c.PROCUREMENT_DEADLINE_SECONDS,
  };
}

/** The target of a topology started with SOAK_SERVICE_ENV (test/topology/harness.ts startTopology). */
export function soakTargetOf(
  t: { apis: { apiUrl: string }[]; databaseUrl: string; temporalAddress: string },
  payloadKeys: string,
): SoakTarget {
  return {
    apiUrls: t.apis.map((a) => a.apiUrl),
    databaseUrl: t.databaseUrl,
    temporalAddress: t.temporalAddress,
    payloadKeys,
    paymentWindowSeconds: Number(SOAK_SERVICE_ENV.PAYMENT_WINDOW_SECONDS),
    lateWatchSeconds: Number(SOAK_SERVICE_ENV.LATE_PAYMENT_WATCH_SECONDS),
    webhookMaxAttempts: Number(SOAK_SERVICE_ENV.WEBHOOK_MAX_ATTEMPTS),
    deadlines: deadlineSettingsOf(loadConfig(SOAK_SERVICE_ENV)),
  };
}

export interface SoakPlan {
  seed: number;
  /** Stop issuing operations after this long... */
  durationMs: number;
  /** ...or after this many operations, whichever comes first. */
  maxOps: number;
  accounts: number;
  concurrency: number;
  /** Funding of each account (Decimal). */
  funding?: string;
  mix?: Partial<Record<Op, number>>;
  /** Share of operations sent twice at once to two API processes. */
  racing?: number;
  /** Share of acknowledged operations resent later (a client retry after a lost answer). */
  duplicate?: number;
  /** Webhook receivers by account, cycled. */
  hookModes?: HookMode[];
  /** Configure a webhook receiver for each account (default true; one PUT /webhook per key). */
  webhooks?: boolean;
  /** Per-request deadline on the client side: a request slower than this is a hang. */
  requestTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface Account {
  accountId: string;
  apiKey: string;
  hook: HookMode;
  topups: number;
}

/** A 2xx answer for one business id (every answer for that id must name the same object). */
export interface Ack {
  kind: 'order' | 'topup' | 'redemption';
  accountId: string;
  externalId: string;
  id: string;
  payment?: 'balance' | 'intent';
  fate?: 'pay' | 'late' | 'expire';
  checkoutUrl?: string | null;
  answers: number;
}

export interface HttpStat {
  status: number | 'timeout' | 'network';
  ms: number;
  path: string;
  /** Set on the soak's own log of requests (the report's placement latencies). */
  method?: string;
  /** An order's payment mode (`balance`, `intent`), on the same log. */
  payment?: string;
  api: number;
  at: number;
  body?: any;
  retryAfter?: string;
}

/** A seeded PRNG (mulberry32): the same seed gives the same operations in the same order. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
    chance: (p: number) => next() < p,
  };
}

export interface Report {
  seed: number;
  counts: Record<string, number | string>;
  statuses: Record<string, number>;
  violations: string[];
  /** Workflows by status; running ones that are legitimately waiting, by reason. */
  workflows: Record<string, number>;
  text: string;
}
