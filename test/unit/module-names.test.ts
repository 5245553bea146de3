import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

// A reader finds a module by its name: no two modules of the service share one (an `orders.ts` in
// six folders made every stack trace and every search a guess). A base name says its layer where
// the folder alone would not: `*-store.ts` (src/db), `*-entities.ts` (src/db/entities),
// `*-router.ts` (src/http/routers), `*-contract.ts` (src/contracts), `console-*.ts` and
// `account-*.ts` (the two signed-in areas), `*-activities.ts`, `*-workflow.ts`.
const root = join(__dirname, '..', '..');
const FOLDERS = ['src', 'workflows', 'activities'];
// Migrations are named by their timestamp, not found by their name.
const NOT_MODULES = new Set(['src/db/migrations']);

function modules(folder: string): string[] {
  if (NOT_MODULES.has(relative(root, folder))) return [];
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith('.ts') ? [relative(root, path)] : [];
  });
}

test('no two modules of src, workflows and activities share a base name, in any folder', () => {
  const all = FOLDERS.flatMap((folder) => modules(join(root, folder)));
  expect(all.length).toBeGreaterThan(200);
  const byName = new Map<string, string[]>();
  for (const path of all) {
    const name = path.slice(path.lastIndexOf('/') + 1);
    byName.set(name, [...(byName.get(name) ?? []), path]);
  }
  const shared = [...byName]
    .filter(([, paths]) => paths.length > 1)
    .map(([name, paths]) => `${name}: ${paths.join(', ')}`);
  expect(shared).toEqual([]);
});

test('the layers whose folder does not say it carry it in the base name', () => {
  const suffixed: Record<string, RegExp> = {
    'src/db/entities': /^(all-entities|entity-columns|[a-z-]+-entities)\.ts$/,
    'src/http/routers': /-router\.ts$/,
    'src/console': /^console-/,
    'src/pages/account': /^account-/,
  };
  const off = Object.entries(suffixed).flatMap(([folder, rule]) =>
    modules(join(root, folder))
      .map((path) => path.slice(folder.length + 1))
      .filter((name) => !rule.test(name))
      .map((name) => `${folder}/${name}`),
  );
  expect(off).toEqual([]);
});
