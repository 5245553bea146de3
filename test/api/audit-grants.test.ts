import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client as PgClient } from 'pg';
import { ConfigError } from '../../src/config';
import { initOrm, migrate } from '../../src/db/orm';
import { auditLogGuard } from '../../src/db/service-role';
import { auditRows, signedIn, staffMember } from '../helpers/console';
import { createTestDatabase, reseller, startHarness, type Harness } from '../helpers/harness';
import { expectLedgerMatchesBalance } from '../helpers/money';

// The audit log is append-only by grants (docs/operations.md, Database roles): migrations run as
// the schema's owner (DATABASE_MIGRATION_URL) and the service as a role that owns nothing
// (DATABASE_URL), which gets INSERT and SELECT alone on the audit tables. On the real Postgres, as
// a non-superuser service role: the service starts, sells and audits; then that role's UPDATE,
// DELETE, TRUNCATE, trigger disabling and DROP of the audit log are all refused.
const tag = randomBytes(4).toString('hex');
const OWNER = `wholesale_owner_${tag}`;
const SERVICE = `wholesale_app_${tag}`;
const DATABASES = [`t_grants_${tag}`, `t_grants_fresh_${tag}`];
const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;

const urlAs = (role: string, database: string) => {
  const url = new URL(process.env.TEST_DATABASE_URL!);
  [url.username, url.password, url.pathname] = [role, PASSWORD, `/${database}`];
  return url.toString();
};

async function asSuperuser(statements: string[]): Promise<void> {
  const pg = new PgClient({ connectionString: process.env.TEST_DATABASE_URL });
  await pg.connect();
  try {
    for (const sql of statements) await pg.query(sql);
  } finally {
    await pg.end();
  }
}

let h: Harness;
let service: PgClient;

beforeAll(async () => {
  // Neither role is a superuser or may create roles; the owner owns the databases (and so their
  // public schema); the service role owns nothing.
  await asSuperuser([
    `create role "${OWNER}" login password '${PASSWORD}' nosuperuser nocreaterole nocreatedb`,
    `create role "${SERVICE}" login password '${PASSWORD}' nosuperuser nocreaterole nocreatedb`,
    ...DATABASES.map((db) => `create database "${db}" owner "${OWNER}"`),
  ]);
  h = await startHarness(
    { DATABASE_MIGRATION_URL: urlAs(OWNER, DATABASES[0]), SIGN_IN_RATE_LIMIT_PER_IP: '1000' },
    { databaseUrl: urlAs(SERVICE, DATABASES[0]) },
  );
  service = new PgClient({ connectionString: urlAs(SERVICE, DATABASES[0]) });
  await service.connect();
}, 120_000);

afterAll(async () => {
  await service?.end();
  await h?.stop();
  await asSuperuser([
    ...DATABASES.map((db) => `drop database if exists "${db}" with (force)`),
    `drop role if exists "${SERVICE}"`,
    `drop role if exists "${OWNER}"`,
  ]).catch(() => undefined);
});

/** The Postgres error code a statement of the service role fails with. */
const refusal = (sql: string) =>
  service.query(sql).then(
    () => 'done',
    (err: { code?: string }) => err.code,
  );

test('as a role that owns nothing, the service sells and audits; that role cannot rewrite, empty or unguard the audit log', async () => {
  expect(
    (
      await service.query<{ role: string; superuser: boolean }>(
        'select current_user as role, rolsuper as superuser from pg_roles where rolname = current_user',
      )
    ).rows,
  ).toEqual([{ role: SERVICE, superuser: false }]);

  // The service works: a balance order delivered (ledger and balance), a console sign-in audited.
  const { api, accountId } = await reseller(h, '50.00');
  const order = await api.post('/orders', { externalOrderId: 'grants-1', productId: 'prod_chatgpt_plus_1m', qty: 1 });
  expect([order.status, order.body.status]).toEqual([200, 'delivered']);
  const l = await expectLedgerMatchesBalance(h, accountId);
  expect([l.balance, l.rows.map((r) => [r.type, r.amount])]).toEqual([
    '32.00',
    [
      ['adjust', '50.00'],
      ['purchase', '-18.00'],
    ],
  ]);
  const member = await staffMember(h, 'support');
  await signedIn(h, member);
  const signIns = await auditRows(h, `staff_id = ? and action = 'staff.sign_in'`, [member.id]);
  expect(signIns.map((r) => r.outcome)).toEqual(['ok']);
  const count = async () => Number((await service.query('select count(*) as n from audit_log')).rows[0].n);
  const rowsBefore = await count();

  // 42501: insufficient_privilege, for every way to rewrite the log or take its guard away.
  expect(await auditLogGuard(h.services.orm.em.fork())).toBe('grants');
  const id = signIns[0].id;
  for (const sql of [
    `update audit_log set reason = 'edited' where id = ${id}`,
    `delete from audit_log where id = ${id}`,
    'truncate audit_log',
    'truncate audit_outcomes',
    `update audit_outcomes set outcome = 'denied' where audit_id = ${id}`,
    `delete from audit_outcomes where audit_id = ${id}`,
    `insert into audit_outcomes (audit_id, outcome) values (${id}, 'denied') on conflict (audit_id) do update set outcome = excluded.outcome`,
    'alter table audit_log disable trigger audit_log_no_rewrite',
    'alter table audit_log disable trigger user',
    'alter table audit_outcomes disable trigger user',
    `alter table audit_log owner to "${SERVICE}"`,
    'drop trigger audit_log_no_rewrite on audit_log',
    'drop table audit_log cascade',
    `set role "${OWNER}"`,
    `insert into mikro_orm_migrations (name) values ('Migration99990101000000Fake')`,
  ]) {
    expect([sql, await refusal(sql)]).toEqual([sql, '42501']);
  }
  expect(await count()).toBe(rowsBefore);
  expect((await auditRows(h, 'id = ?', [id])).map((r) => [r.reason, r.outcome])).toEqual([[null, 'ok']]);

  // What the service would have if it ran as the owner: the triggers are the owner's to switch off.
  const owner = new PgClient({ connectionString: urlAs(OWNER, DATABASES[0]) });
  await owner.connect();
  try {
    await owner.query('begin');
    for (const table of ['audit_outcomes', 'audit_log']) {
      await owner.query(`alter table ${table} disable trigger user`);
      await owner.query(`delete from ${table} where ${table === 'audit_log' ? 'id' : 'audit_id'} = ${id}`);
    }
    await owner.query('rollback');
  } finally {
    await owner.end();
  }
  expect(await count()).toBe(rowsBefore);
});

test('`wholesale migrate` migrates as the owner and says the service role can only insert and read the audit log', async () => {
  const root = resolve(__dirname, '..', '..');
  const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'bin', 'wholesale.js'), 'migrate'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: urlAs(SERVICE, DATABASES[0]),
      DATABASE_MIGRATION_URL: urlAs(OWNER, DATABASES[0]),
    },
  });
  expect(JSON.parse(stdout)).toEqual({ migrated: [], auditLog: 'grants' });
});

test('one role for everything (here the superuser) keeps working with DATABASE_MIGRATION_URL too, and says what guards the log', async () => {
  const url = await createTestDatabase();
  const orm = await initOrm(url, {}, { quietMigrations: true });
  try {
    expect((await migrate(orm, { migrationUrl: url, quiet: true })).length).toBeGreaterThan(10);
    expect(await auditLogGuard(orm.em.fork())).toBe('superuser');
  } finally {
    await orm.close();
  }
});

test('the service role starts again without the owner once nothing is pending, and is told to use it when something is', async () => {
  const again = await initOrm(urlAs(SERVICE, DATABASES[0]));
  try {
    expect(await migrate(again)).toEqual([]);
  } finally {
    await again.close();
  }
  // A database its owner never migrated: the service role may not create the schema.
  const fresh = await initOrm(urlAs(SERVICE, DATABASES[1]));
  try {
    const err = await migrate(fresh).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /^DATABASE_URL: this role may not change the schema and migrations are pending: run them as the schema's owner with DATABASE_MIGRATION_URL/,
    );
  } finally {
    await fresh.close();
  }
});
