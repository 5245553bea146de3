import type { EntityManager } from '@mikro-orm/postgresql';

// The EVM checkout's tables (Migration20261203000000EvmCheckouts): checkouts and their deposit
// addresses, how far each chain was scanned, and the transfers seen. Each write is conditional,
// so a scan repeated (a retried activity, a second worker) changes nothing twice.

export interface EvmCheckoutRow {
  id: string;
  reference: string;
  derivation_index: number;
  address: `0x${string}`;
  /** The TRON deposit address (hex) when a TRON chain was configured at its opening. */
  tron_address: `0x${string}` | null;
  amount: string;
  currency: string;
  state: 'pending' | 'paid' | 'closed';
  paid_at: Date | null;
  closed_at: Date | null;
  created_at: Date;
}

export interface EvmScanRow {
  checkout_id: string;
  chain_id: number;
  start_block: string;
  scanned_to: string;
  head: string;
  /** How far the rescan before closing has read the address again from `start_block`. */
  rescanned_to: string | null;
  /** On a chain read by finality: the node's finalized block at the last scan. */
  finalized: string | null;
}

export interface EvmTransferRow {
  id: string;
  checkout_id: string;
  chain_id: number;
  tx_hash: string;
  log_index: number;
  token: string;
  units: string;
  decimals: number;
  block_number: string;
  block_hash: string;
  state: 'seen' | 'confirmed' | 'dropped';
  applied: 'payment' | 'excess' | null;
  excess_cents: string;
  credit_reason: string | null;
  seen_at: Date;
  confirmed_at: Date | null;
}

/** The next derivation index: a sequence never hands one out twice, even to a rolled-back transaction. */
export async function nextDerivationIndex(em: EntityManager): Promise<number> {
  const [row] = await em.execute<{ index: number }[]>(`select nextval('evm_derivation_index_seq')::int as index`);
  return row.index;
}

export async function insertEvmCheckout(
  em: EntityManager,
  c: {
    id: string;
    reference: string;
    derivationIndex: number;
    address: string;
    tronAddress?: string;
    amount: string;
    currency: string;
  },
): Promise<void> {
  await em.execute(
    'insert into evm_checkouts (id, reference, derivation_index, address, tron_address, amount, currency) values (?, ?, ?, ?, ?, ?, ?)',
    [
      c.id,
      c.reference,
      c.derivationIndex,
      c.address.toLowerCase(),
      c.tronAddress?.toLowerCase() ?? null,
      c.amount,
      c.currency,
    ],
  );
}

export async function evmCheckout(
  em: EntityManager,
  id: string,
  opts: { lock?: boolean } = {},
): Promise<EvmCheckoutRow | undefined> {
  const rows = await em.execute<EvmCheckoutRow[]>(
    `select * from evm_checkouts where id = ?${opts.lock ? ' for update' : ''}`,
    [id],
  );
  return rows[0];
}

export async function evmCheckoutAt(em: EntityManager, depositIndex: number): Promise<EvmCheckoutRow | undefined> {
  const rows = await em.execute<EvmCheckoutRow[]>('select * from evm_checkouts where derivation_index = ?', [
    depositIndex,
  ]);
  return rows[0];
}

export async function evmScans(em: EntityManager, checkoutId: string): Promise<EvmScanRow[]> {
  return em.execute<EvmScanRow[]>('select * from evm_checkout_scans where checkout_id = ?', [checkoutId]);
}

/** The rescan before closing has read the address up to block `to` on this chain. */
export async function saveEvmRescan(em: EntityManager, checkoutId: string, chainId: number, to: bigint): Promise<void> {
  await em.execute(
    'update evm_checkout_scans set rescanned_to = greatest(rescanned_to, ?), updated_at = now() where checkout_id = ? and chain_id = ?',
    [String(to), checkoutId, chainId],
  );
}

/**
 * Records a transfer seen in a block. Seen again in the same block, nothing changes; seen in
 * another block (re-mined after a reorg) or again after it was dropped, it takes the new block
 * and waits for its confirmations anew. A confirmed transfer never changes.
 */
export async function recordEvmTransfer(
  em: EntityManager,
  t: {
    checkoutId: string;
    chainId: number;
    txHash: string;
    logIndex: number;
    token: string;
    units: bigint;
    decimals: number;
    blockNumber: bigint;
    blockHash: string;
  },
): Promise<void> {
  await em.execute(
    `insert into evm_transfers (checkout_id, chain_id, tx_hash, log_index, token, units, decimals, block_number, block_hash)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (chain_id, tx_hash, log_index) do update
         set block_number = excluded.block_number, block_hash = excluded.block_hash, state = 'seen'
         where evm_transfers.state <> 'confirmed'
           and (evm_transfers.state = 'dropped' or evm_transfers.block_hash <> excluded.block_hash)`,
    [
      t.checkoutId,
      t.chainId,
      t.txHash,
      t.logIndex,
      t.token,
      String(t.units),
      t.decimals,
      String(t.blockNumber),
      t.blockHash,
    ],
  );
}

export async function evmTransfers(em: EntityManager, checkoutId: string): Promise<EvmTransferRow[]> {
  return em.execute<EvmTransferRow[]>(
    'select * from evm_transfers where checkout_id = ? order by block_number, log_index, id',
    [checkoutId],
  );
}

export async function setEvmTransferState(
  em: EntityManager,
  id: string,
  state: 'confirmed' | 'dropped',
  blockHash: string,
): Promise<void> {
  await em.execute(
    `update evm_transfers set state = ?, confirmed_at = case when ? = 'confirmed' then now() else confirmed_at end
       where id = ? and state = 'seen' and block_hash = ?`,
    [state, state, id, blockHash],
  );
}

/** Counts a confirmed transfer once: towards the checkout's amount, or as excess credited with its reason. */
export async function applyEvmTransfer(
  em: EntityManager,
  id: string,
  applied: 'payment' | 'excess',
  excessCents: bigint,
  reason: string | null,
): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update evm_transfers set applied = ?, excess_cents = ?, credit_reason = ? where id = ? and state = 'confirmed' and applied is null returning id`,
    [applied, String(excessCents), reason, id],
  );
  return rows.length === 1;
}

export async function setEvmCheckoutState(em: EntityManager, id: string, state: 'paid' | 'closed'): Promise<void> {
  await em.execute(
    `update evm_checkouts set state = ?, paid_at = case when ? = 'paid' then now() else paid_at end,
       closed_at = case when ? = 'closed' then now() else closed_at end where id = ?`,
    [state, state, state, id],
  );
}

export async function evmCheckoutCounts(em: EntityManager): Promise<{ state: string; n: string }[]> {
  return em.execute<{ state: string; n: string }[]>(
    'select state, count(*)::text as n from evm_checkouts group by state',
  );
}

/** A checkout's amount and its confirmed transfers (units and decimals), for an order's detail. */
export async function evmCheckoutReceipts(
  em: EntityManager,
  checkoutId: string,
): Promise<{ amount: string; transfers: { units: string; decimals: number }[] } | undefined> {
  const [checkout] = await em.execute<{ amount: string }[]>('select amount from evm_checkouts where id = ?', [
    checkoutId,
  ]);
  if (!checkout) return undefined;
  const transfers = await em.execute<{ units: string; decimals: number }[]>(
    `select units, decimals from evm_transfers where checkout_id = ? and state = 'confirmed'`,
    [checkoutId],
  );
  return { amount: checkout.amount, transfers };
}

/**
 * The checkouts a chain's scanner reads for: not closed, and either committed (their order exists)
 * or opened within `uncommittedSeconds` (an order may still commit; one that never does is dropped
 * by its watch once its window is over, and nobody was given its address).
 */
export async function checkoutsToScan(em: EntityManager, uncommittedSeconds: number): Promise<EvmCheckoutRow[]> {
  return em.execute<EvmCheckoutRow[]>(
    `select c.* from evm_checkouts c
      where c.state in ('pending', 'paid')
        and (c.created_at > now() - make_interval(secs => ?) or exists (select 1 from orders o where o.id = c.reference))
      order by c.derivation_index`,
    [uncommittedSeconds],
  );
}

/**
 * A Postgres array literal of ids or numbers (the driver would spread a JS array into separate
 * parameters). Checkout ids are base64url and block numbers digits: nothing here needs quoting.
 */
const pgArray = (values: readonly string[]) => `{${values.join(',')}}`;

/** The scan rows of many checkouts on one chain. */
export async function evmScansOn(
  em: EntityManager,
  chainId: number,
  checkoutIds: readonly string[],
): Promise<EvmScanRow[]> {
  if (checkoutIds.length === 0) return [];
  return em.execute<EvmScanRow[]>(
    'select * from evm_checkout_scans where chain_id = ? and checkout_id = any(?::text[])',
    [chainId, pgArray(checkoutIds)],
  );
}

/** The transfers of many checkouts on one chain still waiting for their confirmations. */
export async function waitingEvmTransfers(
  em: EntityManager,
  chainId: number,
  checkoutIds: readonly string[],
): Promise<EvmTransferRow[]> {
  if (checkoutIds.length === 0) return [];
  return em.execute<EvmTransferRow[]>(
    `select * from evm_transfers where chain_id = ? and state = 'seen' and checkout_id = any(?::text[]) order by block_number, log_index, id`,
    [chainId, pgArray(checkoutIds)],
  );
}

/**
 * The reach of a scan of many checkouts read together, in one statement. The furthest each node
 * read stays (a node behind does not move it back).
 */
export async function saveEvmScans(
  em: EntityManager,
  chainId: number,
  reach: { scannedTo: bigint; head: bigint; finalized: bigint | null },
  starts: readonly { checkoutId: string; startBlock: bigint }[],
): Promise<void> {
  if (starts.length === 0) return;
  await em.execute(
    `insert into evm_checkout_scans (checkout_id, chain_id, start_block, scanned_to, head, finalized)
       select s.checkout_id, ?, s.start_block, ?, ?, ? from unnest(?::text[], ?::bigint[]) as s(checkout_id, start_block)
       on conflict (checkout_id, chain_id) do update
         set scanned_to = greatest(evm_checkout_scans.scanned_to, excluded.scanned_to), head = greatest(evm_checkout_scans.head, excluded.head),
             finalized = greatest(evm_checkout_scans.finalized, excluded.finalized), updated_at = now()`,
    [
      chainId,
      String(reach.scannedTo),
      String(reach.head),
      reach.finalized === null ? null : String(reach.finalized),
      pgArray(starts.map((s) => s.checkoutId)),
      pgArray(starts.map((s) => String(s.startBlock))),
    ],
  );
}

export interface EvmChainScanRow {
  chain_id: number;
  checkouts: number;
  available: boolean;
  scanned_at: Date;
  /** Milliseconds since `scanned_at`, by the database's clock. */
  age_ms: string;
}

/** How the chain's scanner's last tick went. */
export async function saveEvmChainScan(
  em: EntityManager,
  s: { chainId: number; checkouts: number; available: boolean },
): Promise<void> {
  await em.execute(
    `insert into evm_chain_scans (chain_id, checkouts, available, scanned_at) values (?, ?, ?, now())
       on conflict (chain_id) do update set checkouts = excluded.checkouts, available = excluded.available, scanned_at = now()`,
    [s.chainId, s.checkouts, s.available],
  );
}

export async function evmChainScans(em: EntityManager): Promise<EvmChainScanRow[]> {
  return em.execute<EvmChainScanRow[]>(
    'select *, round(extract(epoch from now() - scanned_at) * 1000)::bigint as age_ms from evm_chain_scans order by chain_id',
  );
}
