import { z } from 'zod';

// The settings of the opt-in events (product.updated, balance.low), apart from config.ts so that
// its schema only spreads them in.

export const eventSettings = {
  // Changes to one product within this long after the first are announced as one product.updated
  // (none when they cancel out): a price set level by level is one event, not five.
  PRODUCT_UPDATE_COALESCE_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
};
