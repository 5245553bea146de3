import type { EntityManager } from '@mikro-orm/postgresql';
import { accountSummaryRow } from '../../db/accounts-store';
import { deliveryRow } from '../../db/webhooks-store';
import { ApiError } from '../../domain/errors';
import { LEVELS } from '../../domain/levels';
import { fromDb, toDecimal, type Cents } from '../../domain/money';
import { deliveryItem } from '../webhooks/webhooks';

// Read models of the account area that the REST API has no endpoint for: the level progress
// behind GET /balance, and one webhook delivery by id (the API lists them only).

export interface AccountSummary {
  name: string;
  balance: string;
  level: number;
  cumulativeSpending: string;
  /** Spending plus balance: what levels are measured by (spec 1). */
  progress: string;
  /** The next level and what it takes, or null at the top level. */
  next: { level: number; threshold: string; remaining: string } | null;
}

export async function accountSummary(
  em: EntityManager,
  accountId: string,
  thresholds: readonly Cents[],
): Promise<AccountSummary> {
  const row = await accountSummaryRow(em, accountId);
  if (!row) throw new ApiError('not_found', 'Account not found');
  const progress = fromDb(row.cumulative_spending) + fromDb(row.balance);
  const top = LEVELS[LEVELS.length - 1];
  // Levels never go down (spec 1), so the next one follows the stored level, not the progress.
  const threshold = row.level < top ? thresholds[row.level - 1] : undefined;
  return {
    name: row.name,
    balance: toDecimal(fromDb(row.balance)),
    level: row.level,
    cumulativeSpending: toDecimal(fromDb(row.cumulative_spending)),
    progress: toDecimal(progress),
    next:
      threshold === undefined
        ? null
        : {
            level: row.level + 1,
            threshold: toDecimal(threshold),
            remaining: toDecimal(Math.max(0, threshold - progress)),
          },
  };
}

/** One of the account's webhook deliveries; another account's id is not found. */
export async function findDelivery(em: EntityManager, accountId: string, deliveryId: string) {
  const row = await deliveryRow(em, accountId, deliveryId);
  if (!row) throw new ApiError('not_found', `Delivery ${deliveryId} not found`);
  return deliveryItem(row);
}
