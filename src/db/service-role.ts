import type { EntityManager } from '@mikro-orm/postgresql';

// Two database roles (docs/operations.md, *Database roles and the audit log*): the schema's owner runs the migrations
// (DATABASE_MIGRATION_URL), and the service runs as a role that owns nothing (DATABASE_URL). The
// owner grants the service the rows it works with, and on the audit log only INSERT and SELECT:
// a role that neither owns the table nor has UPDATE, DELETE or TRUNCATE on it cannot rewrite a
// row, empty the table or disable its triggers, whatever code runs under it.

const AUDIT_TABLES = ['audit_log', 'audit_outcomes'];
/** Which migrations ran is the owner's to write: the service only reads it. */
const MIGRATIONS_TABLE = 'mikro_orm_migrations';

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The role a connection acts as. */
export async function currentRole(em: EntityManager): Promise<string> {
  const [row] = await em.execute<{ role: string }[]>('select current_user as role');
  return row.role;
}

/**
 * Run as the owner after its migrations: gives `serviceRole` what the service needs on every table
 * and sequence of the schema, and no more than INSERT and SELECT on the audit tables. Idempotent,
 * so tables a later migration adds are granted on the next run. Nothing to do when the service
 * runs as the owner itself.
 */
export async function grantServiceRole(owner: EntityManager, serviceRole: string): Promise<void> {
  if ((await currentRole(owner)) === serviceRole) return;
  const role = ident(serviceRole);
  const statements = [
    `grant usage on schema public to ${role}`,
    `grant select, insert, update, delete on all tables in schema public to ${role}`,
    `grant usage, select on all sequences in schema public to ${role}`,
    `revoke all on ${AUDIT_TABLES.map(ident).join(', ')} from ${role}`,
    `grant select, insert on ${AUDIT_TABLES.map(ident).join(', ')} to ${role}`,
    `revoke insert, update, delete, truncate on ${ident(MIGRATIONS_TABLE)} from ${role}`,
  ];
  await owner.transactional(async (tx) => {
    // Processes starting together would otherwise grant at once, and Postgres refuses concurrent
    // changes to one object's privileges ("tuple concurrently updated").
    await tx.execute(`select pg_advisory_xact_lock(hashtext('wholesale:grant-service-role'))`);
    for (const sql of statements) await tx.execute(sql);
  });
}

/**
 * What keeps the current role from rewriting the audit log: `grants` when it can only insert and
 * read; otherwise why not (a superuser, the table's owner or a member of it, or a role granted
 * UPDATE, DELETE or TRUNCATE), and then the log is append-only only by triggers that role may drop.
 */
export async function auditLogGuard(em: EntityManager): Promise<'grants' | 'superuser' | 'owner' | 'privileges'> {
  const [row] = await em.execute<{ superuser: boolean; owner: boolean; rewrite: boolean }[]>(
    `select r.rolsuper as superuser,
            pg_has_role(current_user, c.relowner, 'MEMBER') as owner,
            has_table_privilege(c.oid, 'UPDATE, DELETE, TRUNCATE') as rewrite
       from pg_class c, pg_roles r
      where c.oid = 'audit_log'::regclass and r.rolname = current_user`,
  );
  if (row.superuser) return 'superuser';
  if (row.owner) return 'owner';
  return row.rewrite ? 'privileges' : 'grants';
}
