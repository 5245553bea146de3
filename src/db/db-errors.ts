// Which database errors mean "Postgres is unreachable or restarting" (answered as a retryable
// 503) rather than a bug (500).

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down)
  '53300', // too_many_connections
  '08000',
  '08001',
  '08003',
  '08004',
  '08006', // connection exceptions
]);

const UNAVAILABLE_MESSAGES =
  /Connection terminated|Timeout acquiring a connection|connect ECONNREFUSED|Client has encountered a connection error|the database system is (starting up|shutting down|in recovery mode)|terminating connection due to administrator command|read ECONNRESET|write EPIPE/i;

export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { name?: string; code?: unknown; message?: unknown };
    if (x.name === 'KnexTimeoutError' || x.name === 'ConnectionException') return true;
    if (typeof x.code === 'string' && UNAVAILABLE_CODES.has(x.code)) return true;
    if (typeof x.message === 'string' && UNAVAILABLE_MESSAGES.test(x.message)) return true;
  }
  return false;
}
