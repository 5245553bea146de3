import { z } from 'zod';

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
      ctx.addIssue({ code: 'custom', message: 'expected four Decimal amounts for Lv2..Lv5, e.g. 500,2000,10000,50000' });
      return z.NEVER;
    }
    if (cents.some((c, i) => i > 0 && c <= cents[i - 1])) {
      ctx.addIssue({ code: 'custom', message: 'thresholds must increase from Lv2 to Lv5' });
      return z.NEVER;
    }
    return cents;
  });

export const configSchema = z.object({
  PORT: int(8080),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  STATE_DIR: z.string().default('.state'),
  EMBEDDED_PG_PORT: int(54329, 1),
  TEMPORAL_PORT: int(7233, 1),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('wholesale'),
  TEMPORAL_UI_PORT: int(8233),
  PUBLIC_BASE_URL: z.string().url().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ADMIN_TOKEN: z.string().min(16).optional(),
  // Signs list cursors so a forged one is rejected; it grants no access, but set it in production.
  CURSOR_SECRET: z.string().min(8).default('wholesale-dev-cursor-secret'),

  PAYMENT_WINDOW_SECONDS: int(900, 1),
  PAYMENT_SYNC_SECONDS: int(10, 1),
  REDEMPTION_REFRESH_SECONDS: int(60, 1),
  WEBHOOK_TIMEOUT_MS: int(5000, 1),
  WEBHOOK_RETRY_BASE_SECONDS: int(30, 0),
  WEBHOOK_RETRY_CAP_SECONDS: int(21600, 1),
  WEBHOOK_MAX_ATTEMPTS: int(10, 1),
  WEBHOOK_ALLOW_INSECURE_URLS: bool(false),
  LEVEL_THRESHOLDS: levelThresholds,

  // Hosted checkout: the built-in sandbox provider is served by this service under /sandbox-pay.
  PAYMENT_PROVIDER_URL: z.string().url().optional(),
  PAYMENT_PROVIDER_TIMEOUT_MS: int(10000, 1),
  PAYMENT_CALLBACK_SECRET: z.string().min(8).default('sandbox-callback-secret'),
  SANDBOX_PAYMENT_FAULT: z.enum(['none', 'error', 'timeout']).default('none'),
  SANDBOX_CALLBACK_DELAY_MS: int(0, 0),
  // After expiry the workflow keeps asking the provider for a late payment this long, this often.
  LATE_PAYMENT_WATCH_SECONDS: int(86400, 0),
  LATE_PAYMENT_POLL_SECONDS: int(300, 1),
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
  // The built-in sandbox supplier's script, JSON by product id or "*" (see src/providers/sandbox-supplier.ts).
  SANDBOX_SUPPLIER_SCRIPT: z.string().optional(),
});

export type Config = z.infer<typeof configSchema> & { publicBaseUrl: string; paymentProviderUrl: string };

export class ConfigError extends Error {}

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
  const publicBaseUrl = (c.PUBLIC_BASE_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/$/, '');
  return { ...c, publicBaseUrl, paymentProviderUrl: (c.PAYMENT_PROVIDER_URL ?? `${publicBaseUrl}/sandbox-pay`).replace(/\/$/, '') };
}

/** Payment durations handed to the order and top-up workflows (they cannot read the environment). */
export function paymentTiming(c: Config): { syncSeconds: number; lateWatchSeconds: number; latePollSeconds: number } {
  return { syncSeconds: c.PAYMENT_SYNC_SECONDS, lateWatchSeconds: c.LATE_PAYMENT_WATCH_SECONDS, latePollSeconds: c.LATE_PAYMENT_POLL_SECONDS };
}
