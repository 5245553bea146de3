import type { EntityManager } from '@mikro-orm/postgresql';

// Each account's webhook endpoint and the delivery records of its events.

export interface EndpointRow {
  url: string;
  secret: string;
  /** The events it receives; null: every event but the opt-in ones. */
  events: string[] | null;
  /** `balance.low` is sent when the balance falls below this (Decimal string as stored). */
  balance_low_threshold: string | null;
}

export async function endpointOf(em: EntityManager, accountId: string): Promise<EndpointRow | undefined> {
  const [row] = await em.execute<EndpointRow[]>(
    'select url, secret, events, balance_low_threshold from webhook_endpoints where account_id = ?',
    [accountId],
  );
  return row;
}

/** Whether the account has an endpoint, holding it (`for share`) until the caller's transaction ends. */
export async function holdEndpoint(em: EntityManager, accountId: string): Promise<boolean> {
  const endpoint = await em.execute('select 1 from webhook_endpoints where account_id = ? for share', [accountId]);
  return endpoint.length > 0;
}

export async function deleteEndpoint(em: EntityManager, accountId: string): Promise<void> {
  await em.execute('delete from webhook_endpoints where account_id = ?', [accountId]);
}

/** A text[] from a JSON array parameter (the driver would spread a JS array into a list); null stays null. */
const TEXT_ARRAY = '(select array_agg(v) from jsonb_array_elements_text(?::jsonb) v)';

/** Stores the endpoint and what it receives, bumping its version when it replaces one. */
export async function upsertEndpoint(
  em: EntityManager,
  accountId: string,
  e: { url: string; secret: string; events: string[] | null; balanceLowThreshold: string | null },
): Promise<void> {
  await em.execute(
    `insert into webhook_endpoints (account_id, url, secret, events, balance_low_threshold, version, updated_at)
     values (?, ?, ?, ${TEXT_ARRAY}, ?, 1, now())
     on conflict (account_id) do update
       set url = excluded.url, secret = excluded.secret, events = excluded.events, balance_low_threshold = excluded.balance_low_threshold,
           version = webhook_endpoints.version + 1, updated_at = now()`,
    [accountId, e.url, e.secret, e.events ? JSON.stringify(e.events) : null, e.balanceLowThreshold],
  );
}

/** Inserts the delivery of an event; undefined if the event already has one (unique event_id). */
export async function insertDeliveryRow(
  em: EntityManager,
  id: string,
  eventId: string,
  accountId: string,
): Promise<string | undefined> {
  const rows = await em.execute<{ id: string }[]>(
    `insert into webhook_deliveries (id, event_id, account_id, status, next_attempt_at) values (?, ?, ?, 'pending', now())
     on conflict (event_id) do nothing returning id`,
    [id, eventId, accountId],
  );
  return rows[0]?.id;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** `created_at` in Postgres' own text form, for keyset cursors. */
  position: string;
}

const DELIVERY_COLUMNS = `d.id, d.event_id, e.type as event, d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at,
                    d.created_at, d.updated_at, d.created_at::text as position`;

/** One page of an account's deliveries, newest first, keyset-paginated on (created_at, id). */
export async function deliveryPage(
  em: EntityManager,
  q: { accountId: string; after?: { createdAt: string; id: string }; limit: number },
): Promise<DeliveryRow[]> {
  const params: unknown[] = [q.accountId];
  let sql = `select ${DELIVERY_COLUMNS}
               from webhook_deliveries d join events e on e.id = d.event_id
              where d.account_id = ?`;
  if (q.after) {
    sql += ' and (d.created_at, d.id) < (?::timestamptz, ?)';
    params.push(q.after.createdAt, q.after.id);
  }
  sql += ' order by d.created_at desc, d.id desc limit ?';
  params.push(q.limit);
  return em.execute<DeliveryRow[]>(sql, params);
}

export async function deliveryRow(
  em: EntityManager,
  accountId: string,
  deliveryId: string,
): Promise<DeliveryRow | undefined> {
  const [row] = await em.execute<DeliveryRow[]>(
    `select ${DELIVERY_COLUMNS}
       from webhook_deliveries d join events e on e.id = d.event_id
      where d.id = ? and d.account_id = ?`,
    [deliveryId, accountId],
  );
  return row;
}

/** Locks one of the account's deliveries for the rest of the caller's transaction; false if there is none. */
export async function lockDelivery(em: EntityManager, accountId: string, deliveryId: string): Promise<boolean> {
  const [row] = await em.execute<{ id: string }[]>(
    'select id from webhook_deliveries where id = ? and account_id = ? for update',
    [deliveryId, accountId],
  );
  return !!row;
}

/** Pending again and due now, keeping its attempt count, with a fresh attempt budget from here. */
export async function resetDelivery(em: EntityManager, deliveryId: string): Promise<void> {
  await em.execute(
    `update webhook_deliveries set status = 'pending', next_attempt_at = now(), budget_start = attempts, updated_at = now() where id = ?`,
    [deliveryId],
  );
}

/**
 * Claims, oldest first, up to `limit` of the account's failed or cancelled deliveries created in
 * [since, until), locking them for the caller's transaction. A concurrent claim waits, then finds
 * them pending (the status is checked again once the lock is had), so no delivery is claimed twice.
 */
export async function claimUnsentDeliveries(
  em: EntityManager,
  q: { accountId: string; since: Date; until: Date | null; limit: number },
) {
  return em.execute<{ id: string }[]>(
    `select id from webhook_deliveries
      where account_id = ? and status in ('failed', 'cancelled') and created_at >= ? and (?::timestamptz is null or created_at < ?::timestamptz)
      order by created_at, id limit ? for update`,
    [q.accountId, q.since, q.until, q.until, q.limit],
  );
}

/** Pending again and due now, each with a fresh attempt budget (resetDelivery for many). */
export async function resetDeliveries(em: EntityManager, deliveryIds: string[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await em.execute(
    `update webhook_deliveries set status = 'pending', next_attempt_at = now(), budget_start = attempts, updated_at = now() where id in (?)`,
    [deliveryIds],
  );
}

/** A delivery with the event it carries. */
export async function deliveryWithEvent(em: EntityManager, deliveryId: string) {
  const [row] = await em.execute<
    { account_id: string; event_id: string; type: string; payload: Record<string, unknown>; created_at: Date }[]
  >(
    `select d.account_id, e.id as event_id, e.type, e.payload, e.created_at
           from webhook_deliveries d join events e on e.id = d.event_id where d.id = ?`,
    [deliveryId],
  );
  return row;
}

/** No endpoint to send to: the delivery stops for good. Returns the attempts made. */
export async function cancelDelivery(em: EntityManager, deliveryId: string, reason: string): Promise<number> {
  const [cancelled] = await em.execute<{ attempts: number }[]>(
    `update webhook_deliveries set status = 'cancelled', next_attempt_at = null, last_error = ?, attempt_open = false, updated_at = now()
            where id = ? returning attempts`,
    [reason, deliveryId],
  );
  return cancelled.attempts;
}

/**
 * Claims the attempt about to be made, before its POST: its number, and how many attempts of the
 * budget of `maxAttempts` it leaves (0: it is the last). An attempt claimed and never recorded (its
 * worker died mid-POST, or the recording failed) is the same attempt again, not a new one: the
 * count is of attempts, not of tries to make them. Undefined when the budget is spent: attempts
 * made by an earlier run of the delivery count against it too.
 */
export async function claimDeliveryAttempt(
  em: EntityManager,
  deliveryId: string,
  maxAttempts: number,
): Promise<{ attempt: number; left: number } | undefined> {
  const [claimed] = await em.execute<{ attempts: number; budget_start: number }[]>(
    `update webhook_deliveries
        set attempts = attempts + case when attempt_open then 0 else 1 end, attempt_open = true, updated_at = now()
      where id = ? and (attempt_open or attempts - budget_start < ?) returning attempts, budget_start`,
    [deliveryId, maxAttempts],
  );
  return claimed && { attempt: claimed.attempts, left: maxAttempts - (claimed.attempts - claimed.budget_start) };
}

/** A delivery whose attempt budget was spent before this run could make one: failed, as its last attempt left it. */
export async function failSpentDelivery(em: EntityManager, deliveryId: string): Promise<number> {
  const [failed] = await em.execute<{ attempts: number }[]>(
    `update webhook_deliveries set status = 'failed', next_attempt_at = null, updated_at = now() where id = ? returning attempts`,
    [deliveryId],
  );
  return failed.attempts;
}

/** An attempt's result, which closes it; a retry is scheduled `retryInSeconds` from now (the database's clock). */
export async function recordDeliveryAttempt(
  em: EntityManager,
  deliveryId: string,
  r: { status: string; statusCode: number | null; error: string | null; retry: boolean; retryInSeconds: number },
): Promise<void> {
  await em.execute(
    `update webhook_deliveries
            set status = ?, last_status_code = ?, last_error = ?, attempt_open = false, updated_at = now(),
                next_attempt_at = case when ? then now() + make_interval(secs => ?) else null end
          where id = ?`,
    [r.status, r.statusCode, r.error, r.retry, r.retryInSeconds, deliveryId],
  );
}

/** One webhook delivery of an order's events, as the console's story of the order shows it. */
export interface OrderDelivery {
  id: string;
  event: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
}

/** Webhook deliveries of the events about one order, oldest first. */
export async function deliveriesOfOrder(em: EntityManager, orderId: string): Promise<OrderDelivery[]> {
  return em.execute<OrderDelivery[]>(
    `select d.id, e.type as event, d.status, d.attempts, d.last_status_code, d.last_error, d.created_at
       from webhook_deliveries d join events e on e.id = d.event_id
      where e.payload->>'orderId' = ? order by d.created_at, d.id`,
    [orderId],
  );
}
