import type { EntityManager } from '@mikro-orm/postgresql';

// The built-in sandbox providers' own tables: the payment sandbox's checkouts and the supplier
// sandbox's purchases. They stand in for a provider's database, not for this service's facts.

export interface SandboxCheckoutRow {
  id: string;
  reference: string;
  amount: string;
  currency: string;
  description: string;
  callback_url: string;
  status: 'pending' | 'paid' | 'abandoned';
  paid_at: Date | null;
}

export async function insertSandboxCheckout(
  em: EntityManager,
  c: { id: string; reference: string; amount: string; currency: string; description: string; callbackUrl: string },
): Promise<void> {
  await em.execute(
    'insert into sandbox_checkouts (id, reference, amount, currency, description, callback_url) values (?, ?, ?, ?, ?, ?)',
    [c.id, c.reference, c.amount, c.currency, c.description, c.callbackUrl],
  );
}

export async function sandboxCheckout(em: EntityManager, id: string): Promise<SandboxCheckoutRow | undefined> {
  const rows = await em.execute<SandboxCheckoutRow[]>('select * from sandbox_checkouts where id = ?', [id]);
  return rows[0];
}

/** Paid (once: a repeat keeps the first time), unless abandoned; the row, or undefined. */
export async function markSandboxCheckoutPaid(
  em: EntityManager,
  checkoutId: string,
): Promise<SandboxCheckoutRow | undefined> {
  const rows = await em.execute<SandboxCheckoutRow[]>(
    `update sandbox_checkouts set status = 'paid', paid_at = coalesce(paid_at, now()) where id = ? and status <> 'abandoned' returning *`,
    [checkoutId],
  );
  return rows[0];
}

/** Abandoned, if still pending; the row, or undefined. */
export async function markSandboxCheckoutAbandoned(
  em: EntityManager,
  checkoutId: string,
): Promise<SandboxCheckoutRow | undefined> {
  const rows = await em.execute<SandboxCheckoutRow[]>(
    `update sandbox_checkouts set status = 'abandoned' where id = ? and status = 'pending' returning *`,
    [checkoutId],
  );
  return rows[0];
}

/**
 * Records a supplier purchase under its idempotency key; returns its codes, or undefined when a
 * purchase with that key was recorded first. A driver error quotes the codes: callers replace it.
 */
export async function insertSupplierPurchase(
  em: EntityManager,
  p: { idempotencyKey: string; productId: string; requested: number; codes: string[] },
): Promise<string[] | undefined> {
  const inserted = await em.execute<{ codes: string[] }[]>(
    `insert into sandbox_supplier_orders (idempotency_key, product_id, requested, codes) values (?, ?, ?, ?::jsonb)
         on conflict (idempotency_key) do nothing returning codes`,
    [p.idempotencyKey, p.productId, p.requested, JSON.stringify(p.codes)],
  );
  return inserted[0]?.codes;
}

export async function supplierPurchase(em: EntityManager, idempotencyKey: string): Promise<string[] | undefined> {
  const rows = await em.execute<{ codes: string[] }[]>(
    'select codes from sandbox_supplier_orders where idempotency_key = ?',
    [idempotencyKey],
  );
  return rows[0]?.codes;
}
