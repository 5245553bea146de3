import type { EntityManager } from '@mikro-orm/postgresql';

// The facts a hosted-checkout payment settles on (Migration20261210000000MoneyFromFacts and the
// EVM checkout's own tables). Each read runs in the settling transaction, under the order's lock.

/** `chain`: an EVM checkout's watch marked it paid (its transfers are what it settles on). */
export type ConfirmationSource = 'callback' | 'status' | 'chain';

/**
 * The provider told the service itself that this checkout was paid: a callback whose signature
 * verified, or its status endpoint (or the chain, for an EVM checkout). Recorded once per
 * checkout; a repeat changes nothing. One for an order already settled is recorded settled, so
 * only a payment still waiting for its order stays open for the reconciler (pendingPayments).
 */
export async function recordPaymentConfirmation(
  em: EntityManager,
  c: { checkoutId: string; orderId: string; source: ConfirmationSource },
): Promise<void> {
  await em.execute(
    `insert into payment_confirmations (checkout_id, order_id, source, settled_at)
       select ?, o.id, ?, case when o.status in ('pending', 'expired') then null else now() end from orders o where o.id = ?
     on conflict (checkout_id) do nothing`,
    [c.checkoutId, c.source, c.orderId],
  );
}

/** The order's payment was settled (in the settling transaction): its confirmations are closed. */
export async function markPaymentSettled(em: EntityManager, orderId: string): Promise<void> {
  await em.execute('update payment_confirmations set settled_at = now() where order_id = ? and settled_at is null', [
    orderId,
  ]);
}

/** Whether a verified confirmation of one of the order's checkouts is on record. */
export async function hasPaymentConfirmation(em: EntityManager, orderId: string): Promise<boolean> {
  const rows = await em.execute<{ found: number }[]>(
    'select 1 as found from payment_confirmations where order_id = ? limit 1',
    [orderId],
  );
  return rows.length > 0;
}

/**
 * Whether the order's EVM checkout was paid as the watch recorded it under its lock: marked paid,
 * with confirmed transfers counted towards it that reach the order's amount.
 */
export async function evmPaymentReached(em: EntityManager, orderId: string): Promise<boolean> {
  const rows = await em.execute<{ reached: boolean }[]>(
    `select coalesce(sum(t.units / power(10::numeric, t.decimals)), 0) >= o.amount as reached
       from orders o
       join evm_checkouts c on c.reference = o.id and c.paid_at is not null
       left join evm_transfers t on t.checkout_id = c.id and t.state = 'confirmed' and t.applied = 'payment'
      where o.id = ?
      group by c.id, o.amount`,
    [orderId],
  );
  return rows.some((r) => r.reached);
}
