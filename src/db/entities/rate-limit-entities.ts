import { EntitySchema } from '@mikro-orm/core';

/** Fixed-window counters shared by every API process (rate limits live in Postgres). */
export interface RateLimitWindow {
  bucket: string;
  windowStart: Date;
  count: number;
}
export const RateLimitSchema = new EntitySchema<RateLimitWindow>({
  name: 'RateLimitWindow',
  tableName: 'rate_limits',
  properties: {
    bucket: { type: 'string', primary: true },
    windowStart: { type: 'Date', columnType: 'timestamptz', primary: true },
    count: { type: 'integer' },
  },
});
