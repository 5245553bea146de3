import pino, { type Logger } from 'pino';

// Secrets never reach logs: keys, webhook secrets, checkout URLs and codes are redacted wherever
// they appear in a logged object.
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'apiKey',
  '*.apiKey',
  'secret',
  '*.secret',
  'checkoutUrl',
  '*.checkoutUrl',
  'paymentUrl',
  '*.paymentUrl',
  'codes',
  '*.codes',
  'code',
  '*.code',
  'redeemInfo',
  '*.redeemInfo',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'wholesale' } }, destination);
}
