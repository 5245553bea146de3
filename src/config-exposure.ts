// What a production process refuses to expose: /metrics on the public port, and plain http to or
// from anything but this host. Each problem names its variable, never a URL (one may hold a key).

export interface ExposureSettings {
  HOST: string;
  METRICS_PORT?: number;
  PUBLIC_BASE_URL?: string;
  PAYMENT_PROVIDER_URL?: string;
  RELOADLY_AUTH_URL?: string;
  RELOADLY_API_URL?: string;
  TEMPORAL_UI_ORIGIN?: string;
}

/** 127.0.0.0/8, ::1 and localhost: a call that never leaves the machine. */
export const isLoopbackHost = (hostname: string) =>
  hostname === 'localhost' ||
  hostname === '[::1]' ||
  hostname === '::1' ||
  /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);

/**
 * The URLs the service calls (Reloadly, a payment provider) or hands out (checkout, redemption and
 * console links; the Temporal UI the codec server answers): https://, or http:// on loopback only.
 */
const OUTSIDE_URLS = [
  'PUBLIC_BASE_URL',
  'PAYMENT_PROVIDER_URL',
  'RELOADLY_AUTH_URL',
  'RELOADLY_API_URL',
  'TEMPORAL_UI_ORIGIN',
] as const;

export function productionExposureProblems(c: ExposureSettings): string[] {
  const problems: string[] = [];
  if (c.METRICS_PORT === undefined) {
    problems.push(
      '  METRICS_PORT: required in production: /metrics, /healthz and /readyz are served on their own port, never on the public API port (METRICS_HOST picks its interface)',
    );
  }
  for (const name of OUTSIDE_URLS) {
    const value = c[name];
    if (value === undefined) continue;
    const url = new URL(value);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
      problems.push(`  ${name}: must be https:// in production (plain http only to a loopback address)`);
    }
  }
  // Unset, the links handed out are http://HOST:PORT: only acceptable where they stay on this host.
  if (c.PUBLIC_BASE_URL === undefined && !isLoopbackHost(c.HOST)) {
    problems.push(
      '  PUBLIC_BASE_URL: required in production when HOST is not loopback (the https:// address resellers and payers reach, used in every link the service hands out)',
    );
  }
  return problems;
}
