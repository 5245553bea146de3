import type { Orm } from './orm';

/**
 * connect-pg-simple's `pgPromise` hook (one function, `any(query, params)` → rows), answered by a
 * connection of the ORM's own pool: no second pool to size and close, and while Postgres is down
 * a session lookup fails like any other query (a retryable 503), instead of hanging. The store
 * writes its own statements against `account_sessions`; this only lends it a connection.
 */
export function sessionStorePool(orm: Orm) {
  return {
    async any(text: string, params: unknown[]): Promise<unknown[]> {
      const knex = orm.em.getConnection().getKnex();
      const connection = await knex.client.acquireConnection();
      try {
        return (await connection.query(text, params)).rows;
      } finally {
        await knex.client.releaseConnection(connection);
      }
    },
  };
}
