import type { Harness } from './harness';

// Orders and ledger rows of one account written in bulk with SQL (as bench/lists.ts seeds them),
// for the export tests: every shape a CSV row takes (purchases and top-ups, each status, direct-code
// orders with their fulfilment fields, nulls), `every` ms apart from `start`. The ledger is a
// valid balanceAfter chain (the account's balance is raised by its sum), with notes that need
// RFC 4180 quoting on some rows.

export interface Seeded {
  first: Date;
  last: Date;
}

export async function seedOrders(
  h: Harness,
  accountId: string,
  n: number,
  opts: { tag: string; start: Date; everyMs: number },
): Promise<Seeded> {
  await h.services.orm.em.fork().execute(
    `insert into orders (id, account_id, kind, channel, source, external_order_id, external_topup_id, product_id, qty, unit_price, amount, currency,
                         payment, status, delivery_type, fulfillment_status, fulfilled_quantity, error_code, resolution, created_at, updated_at, paid_at)
     select 'ord_' || ? || '_' || g, ?::uuid, k.kind, case when k.kind = 'topup' then 'topup' else 'wholesale_api' end, 'rest',
            case when k.kind = 'purchase' then ? || '-' || g end, case when k.kind = 'topup' then ? || '-top-' || g end,
            case when k.kind = 'topup' then null when g % 7 = 3 then 'prod_apple_gift_card_us_25' else 'prod_chatgpt_plus_1m' end,
            1 + g % 3, 17.64, (1 + g % 3) * 17.64, case when g % 5 = 0 then 'USDC' else 'USDT' end,
            case when g % 4 = 1 then 'intent' else 'balance' end,
            case when g % 11 = 5 then 'pending' when g % 13 = 6 then 'expired' when g % 7 = 3 then 'paid' else 'delivered' end,
            case when k.kind = 'topup' then null when g % 7 = 3 then 'direct_code' else 'redemption' end,
            case when k.kind = 'purchase' and g % 7 = 3 then (case when g % 2 = 0 then 'needs_attention' else 'processing' end) end,
            case when k.kind = 'purchase' and g % 7 = 3 then g % 2 else 0 end,
            case when k.kind = 'purchase' and g % 7 = 3 and g % 2 = 0 then 'delivery_needs_attention' end,
            case when k.kind = 'purchase' and g % 7 = 3 and g % 2 = 0 then 'manual_review' end,
            ?::timestamptz + (g - 1) * make_interval(secs => ? / 1000.0), now(),
            case when g % 11 = 5 or g % 13 = 6 then null else ?::timestamptz + (g - 1) * make_interval(secs => ? / 1000.0) + interval '3 seconds' end
       from generate_series(1, ?) g, lateral (select case when g % 10 = 0 then 'topup' else 'purchase' end as kind) k`,
    [opts.tag, accountId, opts.tag, opts.tag, opts.start, opts.everyMs, opts.start, opts.everyMs, n],
  );
  return { first: opts.start, last: new Date(opts.start.getTime() + (n - 1) * opts.everyMs) };
}

export async function seedLedger(
  h: Harness,
  accountId: string,
  n: number,
  opts: { tag: string; start: Date; everyMs: number },
): Promise<Seeded> {
  const em = h.services.orm.em.fork();
  await em.transactional(async (tx) => {
    const [{ balance }] = await tx.execute<{ balance: string }[]>(
      'select balance from accounts where id = ? for update',
      [accountId],
    );
    // Adjustments of +1.25 and -0.50 in turn, so the balance only grows.
    await tx.execute(
      `insert into ledger_transactions (account_id, type, amount, balance_after, order_id, idempotency_key, note, created_at)
       select ?::uuid, 'adjust', case when g % 2 = 1 then 1.25 else -0.50 end,
              ?::numeric + (g / 2) * 0.75 + (g % 2) * 1.25, null, 'seed:' || ? || ':' || g,
              case when g % 9 = 0 then 'goodwill, "VIP"' || chr(13) || chr(10) || 'second line' when g % 4 = 0 then 'plain note' end,
              ?::timestamptz + (g - 1) * make_interval(secs => ? / 1000.0)
         from generate_series(1, ?) g`,
      [accountId, balance, opts.tag, opts.start, opts.everyMs, n],
    );
    await tx.execute('update accounts set balance = balance + ? where id = ?', [
      ((Math.floor(n / 2) * 75 + (n % 2) * 125) / 100).toFixed(2),
      accountId,
    ]);
  });
  return { first: opts.start, last: new Date(opts.start.getTime() + (n - 1) * opts.everyMs) };
}
