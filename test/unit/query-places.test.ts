import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

// One place for queries (docs/architecture.md, Folders): every SQL statement the service runs is in
// a store of src/db, entities are loaded by services and stores, and the layers above the services
// (routers, pages, console, MCP, the CLI, activities, provider adapters, metrics) hand a forked
// entity manager to them and never query through it themselves. So a query is found, tuned and
// locked in one place, and a change to a table touches src/db and the services that use it.
const root = join(__dirname, '..', '..');

/** A statement sent to Postgres: the entity manager's SQL doors, node-postgres, or SQL text in a string. */
const SQL_CALL =
  /\b(em|tx|trx|fork\(\)|connection|knex|client)\.(execute|getConnection|createQueryBuilder|getKnex|query)\(|(^|[^.\w])raw\(|\bsql`/;
const SQL_TEXT =
  /['`"][^'`"]*\b(select\s+[\w*.,\s()]+?\s+from\s+\w+|insert\s+into\s+\w+|update\s+\w+\s+set\s|delete\s+from\s+\w+)/i;
/** Any use of an entity manager but forking it (a fork is what a service or store is handed). */
const EM_USE = /\b(em|tx|trx|fork\(\))\.(?!fork\()\w+\(/;
/** A value import of the entities or of MikroORM: what a query above the services would need. */
const ORM_IMPORT = /^import\s+(?!type\b)[^;]*from\s+'(?:[./]+(?:src\/)?db\/entities(?:\/\w+)?|@mikro-orm\/[\w-]+)'/m;

/**
 * Not the service's own queries: the embedded stack creates databases and clears Temporal's own
 * tables; the sandboxes play outside parties (a payment provider, a supplier), and their store is
 * that party's bookkeeping, kept in their folder with them rather than among the service's stores.
 */
const NOT_THE_SERVICE = ['src/dev/', 'src/providers/sandbox/sandbox-store.ts'];

const ABOVE_THE_SERVICES = [
  'src/http',
  'src/pages',
  'src/console',
  'src/mcp',
  'src/providers',
  'src/metrics',
  'activities',
];

/** Known exceptions, each with its reason; a file listed here is still checked for raw SQL. None today. */
const EXCEPTIONS: Record<string, string> = {};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'migrations' || name === 'node_modules' ? [] : sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const rel = (file: string) => relative(root, file).split('\\').join('/');
/** Comments say why; they may name a statement without running it. */
const code = (file: string) =>
  readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

function sqlFindings(text: string): boolean {
  return SQL_CALL.test(text) || SQL_TEXT.test(text);
}

function entityManagerFindings(text: string): boolean {
  return EM_USE.test(text) || ORM_IMPORT.test(text);
}

test('every SQL statement the service runs is in src/db', () => {
  const outside = ['src', 'activities', 'workflows']
    .flatMap((dir) => sources(join(root, dir)))
    .map(rel)
    .filter((file) => !file.startsWith('src/db/') && !NOT_THE_SERVICE.some((prefix) => file.startsWith(prefix)))
    .filter((file) => sqlFindings(code(join(root, file))));
  expect(outside).toEqual([]);
});

test('nothing above the services queries through the entity manager or imports the entities as values', () => {
  const files = [
    ...ABOVE_THE_SERVICES.flatMap((dir) => sources(join(root, dir))),
    ...readdirSync(join(root, 'src'))
      .filter((name) => /^cli.*\.ts$/.test(name))
      .map((name) => join(root, 'src', name)),
  ].map(rel);
  const found = files
    .filter((file) => !NOT_THE_SERVICE.some((prefix) => file.startsWith(prefix)))
    .filter((file) => entityManagerFindings(code(join(root, file))));
  expect(found.filter((file) => !(file in EXCEPTIONS))).toEqual([]);
});

test('the checks see a query when there is one', () => {
  expect(sqlFindings("await em.execute('select 1')")).toBe(true);
  expect(sqlFindings('const rows = await tx.getConnection().execute(q);')).toBe(true);
  expect(sqlFindings('`update orders set status = ? where id = ?`')).toBe(true);
  expect(sqlFindings("'delete from events'")).toBe(true);
  expect(sqlFindings("router.post('/callback', express.raw({ type: '*/*' }))")).toBe(false);
  expect(entityManagerFindings('const order = await d.em.findOne(OrderSchema, { id });')).toBe(true);
  expect(entityManagerFindings('await orm.em.fork().findOneOrFail(OrderSchema, { id })')).toBe(true);
  expect(entityManagerFindings("import { OrderSchema } from '../../db/entities';")).toBe(true);
  expect(entityManagerFindings("import { wrap } from '@mikro-orm/core';")).toBe(true);
  expect(entityManagerFindings("import type { Order } from '../db/entities';")).toBe(false);
  expect(entityManagerFindings('const payable = await acceptCallback(ctx.orm.em.fork(), notice);')).toBe(false);
});
