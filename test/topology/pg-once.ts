import { Client as PgClient } from 'pg';

/**
 * One short-lived connection for `fn`. The topology tests stop Postgres on purpose: a connection
 * cut while idle makes `pg` emit 'error', which without a listener is an uncaught exception in
 * jest. With the listener the cut surfaces where it belongs, as the pending query's rejection.
 */
export async function withPg<T>(connectionString: string, fn: (c: PgClient) => Promise<T>): Promise<T> {
  const c = new PgClient({ connectionString, connectionTimeoutMillis: 5_000 });
  let lost: Error | undefined;
  c.on('error', (err) => {
    lost = err;
  });
  await c.connect();
  try {
    const out = await fn(c);
    if (lost) throw lost;
    return out;
  } finally {
    await c.end().catch(() => undefined);
  }
}
