import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

// The ledger has one writer: src/db/ledger-store.ts. Every statement that adds, changes or removes a
// ledger row is written there (the placement statement takes its ledger insert from it), so the
// rules of a ledger row (balanceAfter, its idempotency key) live in one place. (The benches seed
// ledgers in bulk for their own databases; they are not the service.)
const root = join(__dirname, '..', '..');
const WRITES = /\b(insert\s+into|update|delete\s+from|truncate(\s+table)?)\s+ledger_transactions\b/i;
const ORM_WRITES =
  /\b(create|persist|insert|nativeInsert|nativeUpdate|nativeDelete|upsert|insertMany|upsertMany)\s*\(\s*(LedgerTransaction|LedgerTransactionSchema)\b/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'migrations' || name === 'node_modules' ? [] : sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

test('only src/db/ledger-store.ts writes ledger_transactions', () => {
  const writers = ['src', 'activities', 'workflows']
    .flatMap((dir) => sources(join(root, dir)))
    .filter((file) => {
      const text = readFileSync(file, 'utf8');
      return WRITES.test(text) || ORM_WRITES.test(text);
    })
    .map((file) => relative(root, file));
  expect(writers).toEqual(['src/db/ledger-store.ts']);
});

test('the check sees a write when there is one', () => {
  expect(WRITES.test('with x as (insert into ledger_transactions (a) values (1))')).toBe(true);
  expect(WRITES.test('UPDATE ledger_transactions set note = 1')).toBe(true);
  expect(WRITES.test('select amount from ledger_transactions')).toBe(false);
  expect(ORM_WRITES.test('em.create(LedgerTransactionSchema, {})')).toBe(true);
});

// The reconciler's ledger checkpoints rely on one account's rows committing in the order of their
// ids, so each row's id is drawn with its account row locked: every insert selects from the
// account's update in its own statement (`balance_update`, or the placement's `debited`).
test('every ledger insert selects from the account row it updated, so its id is drawn under that lock', () => {
  const text = readFileSync(join(root, 'src', 'db', 'ledger-store.ts'), 'utf8');
  const inserts = text.split(/insert\s+into\s+ledger_transactions\b/i).slice(1);
  expect(inserts.length).toBeGreaterThanOrEqual(2);
  for (const rest of inserts) {
    const statement = rest.slice(0, rest.search(/`/));
    expect([statement, /\bvalues\b/i.test(statement)]).toEqual([statement, false]);
    expect([statement, /\bselect\b[\s\S]*\bfrom\s+(balance_update|debited)\b/i.test(statement)]).toEqual([
      statement,
      true,
    ]);
  }
  for (const cte of ['balance_update', 'debited'])
    expect(
      new RegExp(`${cte}\\s+as\\s+\\(\\s*update\\s+accounts\\b`, 'i').test(
        text + readFileSync(join(root, 'src', 'db', 'placement-store.ts'), 'utf8'),
      ),
    ).toBe(true);
});
