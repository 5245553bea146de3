import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { insertStockCodes } from '../../db/catalog-store';
import { normalizeCode, CODE_RE } from '../../codes';
import { parseDecimal, toDecimal, toSignedDecimal, type Cents } from '../../domain/money';
import { ApiError } from '../../domain/errors';
import { findActiveProduct } from '../supply/catalog';
import { noteProductChange } from '../supply/product-updates';
import { applyBalanceChange, lockAccount } from './ledger';

/** An operator's balance correction: an `adjust` ledger row (negative amounts allowed, never below 0). */
export async function adjustBalance(
  em: EntityManager,
  input: { accountId: string; amount: string; note: string; levelThresholds: readonly Cents[] },
): Promise<{ accountId: string; amount: string; balanceAfter: string }> {
  const negative = input.amount.startsWith('-');
  const cents = parseDecimal(negative ? input.amount.slice(1) : input.amount) * (negative ? -1 : 1);
  if (cents === 0) throw new ApiError('invalid_input', 'amount must not be zero');
  return em.transactional(async (tx) => {
    const account = await lockAccount(tx, input.accountId);
    const balance = await applyBalanceChange(
      tx,
      account,
      { type: 'adjust', amount: cents, idempotencyKey: `adjust:${randomUUID()}`, note: input.note },
      input.levelThresholds,
    );
    return { accountId: input.accountId, amount: toSignedDecimal(cents), balanceAfter: toDecimal(balance!) };
  });
}

/**
 * Imports codes of an inventory product, one per line; blank lines and duplicates are skipped.
 * Codes of redemption products must have the platform code format. One transaction: the import
 * is whole or not at all, and product.updated subscribers hear of it once.
 */
export async function importStock(
  em: EntityManager,
  productId: string,
  lines: string[],
): Promise<{ productId: string; imported: number; skipped: number }> {
  const product = await findActiveProduct(em, productId);
  if (product.stockMode !== 'inventory')
    throw new ApiError('invalid_input', `Product ${productId} is not an inventory product`);
  const codes = [
    ...new Set(
      lines
        .map((l) => l.trim())
        .filter(Boolean)
        .map((c) => (product.deliveryType === 'redemption' ? normalizeCode(c) : c)),
    ),
  ];
  const bad = product.deliveryType === 'redemption' ? codes.filter((c) => !CODE_RE.test(c)) : [];
  if (bad.length > 0)
    throw new ApiError('invalid_input', `${bad.length} line(s) are not codes of the form XXXX-XXXX-XXXX-XXXX`);
  const imported = await em.transactional(async (tx) => {
    if (codes.length > 0) await noteProductChange(tx, productId);
    let n = 0;
    for (let i = 0; i < codes.length; i += 500) n += await insertStockCodes(tx, productId, codes.slice(i, i + 500));
    return n;
  });
  return { productId, imported, skipped: lines.length - imported };
}
