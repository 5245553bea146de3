import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

// Which process runs a module is told by where it sits and what it is called: the API process
// calls `src/http`, `src/mcp`, `src/pages`, `src/console` and the `*-submission` / `*-queries`
// services; the worker calls activities and the services they name. An activity that reached an
// API-side module would load the HTTP edge into the worker, and one that reached the workflow
// starters would close an import loop through the workflow bundle (starters → workflow types →
// activity types → activity). These checks read the value imports (type-only imports are erased).
const root = join(__dirname, '..', '..');

const API_SIDE = [
  /^src\/(http|mcp|pages|console)\//,
  /^src\/(api|cli[\w-]*)\.ts$/,
  /^src\/services\/([\w-]+\/)*[\w-]+-(submission|queries)\.ts$/,
];
const STARTERS = 'src/temporal/starters.ts';
/** The reconciler restarts lost workflows: starting them is its job. */
const STARTS_WORKFLOWS = new Set(['activities/reconcile-activities.ts']);

function valueImports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const out: string[] = [];
  const re = /^(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const base = join(dirname(file), m[1]);
    const found = [`${base}.ts`, join(base, 'index.ts')].find(
      (p) => existsSync(join(root, p)) && statSync(join(root, p)).isFile(),
    );
    if (found) out.push(relative(root, join(root, found)));
  }
  return out;
}

/** Every module `file` loads, with the chain that reaches it. */
function closure(file: string): Map<string, string[]> {
  const seen = new Map<string, string[]>([[file, [file]]]);
  const todo = [file];
  while (todo.length) {
    const f = todo.pop()!;
    for (const dep of valueImports(f)) {
      if (seen.has(dep)) continue;
      seen.set(dep, [...seen.get(f)!, dep]);
      todo.push(dep);
    }
  }
  return seen;
}

/** Each activity module (all-activities.ts only composes them, so it reaches what they reach). */
const activities = readdirSync(join(root, 'activities'))
  .filter((f) => f.endsWith('.ts') && f !== 'all-activities.ts')
  .map((f) => `activities/${f}`);

test('no activity loads an API-side module', () => {
  const reached = activities.flatMap((a) =>
    [...closure(a)].filter(([m]) => API_SIDE.some((re) => re.test(m))).map(([, chain]) => chain.join(' → ')),
  );
  expect(reached).toEqual([]);
});

test('only the reconciler’s activities load the workflow starters', () => {
  const reached = activities
    .filter((a) => !STARTS_WORKFLOWS.has(a))
    .flatMap((a) => [...closure(a)].filter(([m]) => m === STARTERS).map(([, chain]) => chain.join(' → ')));
  expect(reached).toEqual([]);
});

test('the worker factory composes no activities: the composition root does', () => {
  expect([...closure('src/temporal/temporal-worker.ts').keys()].filter((m) => m.startsWith('activities/'))).toEqual([]);
  expect(valueImports('src/bootstrap.ts')).toContain('activities/all-activities.ts');
});

test('the checks see the imports they are about', () => {
  expect(closure('activities/reconcile-activities.ts').has(STARTERS)).toBe(true);
  expect(closure('src/http/routers/orders-router.ts').has('src/services/orders/order-submission.ts')).toBe(true);
  // The API's services sit in their lifecycle's folder.
  expect(API_SIDE.some((re) => re.test('src/services/orders/order-submission.ts'))).toBe(true);
  expect(API_SIDE.some((re) => re.test('src/services/orders/order-placement.ts'))).toBe(false);
});
