import { readdirSync } from 'node:fs';
import { join } from 'node:path';

// A reader finds a module by its name: no two modules of the service's layers share one (an
// `orders.ts` in four folders made every stack trace and every search a guess). The folders say
// the side (src/services: what the API and the worker call; src/db: SQL, as `*-store.ts`;
// activities: `*-activities.ts`; workflows: `*-workflow.ts` and their helpers).
const root = join(__dirname, '..', '..');
const FOLDERS = ['src/services', 'src/db', 'workflows', 'activities'];

test('no two modules of src/services, src/db, workflows and activities share a base name', () => {
  const byName = new Map<string, string[]>();
  for (const folder of FOLDERS) {
    for (const file of readdirSync(join(root, folder))) {
      if (!file.endsWith('.ts')) continue;
      byName.set(file, [...(byName.get(file) ?? []), folder]);
    }
  }
  const shared = [...byName]
    .filter(([, folders]) => folders.length > 1)
    .map(([file, folders]) => `${file}: ${folders.join(', ')}`);
  expect(shared).toEqual([]);
});
